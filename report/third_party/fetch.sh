#!/bin/sh
# Fetches the chart library the report embeds, at the version package.json
# and package-lock.json pin, through npm, and copies what the page uses
# (the minified script, its stylesheet and its licence) into uplot/.
# Run it from anywhere after changing the version in package.json; commit
# package-lock.json and uplot/, never node_modules/.
set -eu
cd "$(dirname "$0")"
npm install --no-audit --no-fund --ignore-scripts
for f in dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE; do
  cp "node_modules/uplot/$f" uplot/
done
node -e 'console.log(require("./node_modules/uplot/package.json").version)' > uplot/VERSION
rm -rf node_modules
