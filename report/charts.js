// wanlab report's interactive graphs. The page carries each run's series as
// JSON, in script elements of type application/json and class series-data,
// the palette and the axes' labels once (#chart-config), and marks each
// place for a graph with a div of class chart whose data-chart is a spec
// naming the runs' data and the series to draw. This script draws them
// with uPlot, embedded before it: hovering reads the values in the legend,
// clicking a legend entry hides its series, dragging across the plot zooms
// into that time range and a double click zooms out. It loads nothing and
// sends nothing. Without script, and in print, the static graph or the
// table beside each chart stands in for it.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var config = JSON.parse(document.getElementById("chart-config").textContent);
  var palette = config.palette;
  var cache = {};

  // data returns a run's series, parsed once.
  function data(id) {
    if (!(id in cache)) {
      var el = document.getElementById(id);
      cache[id] = el ? JSON.parse(el.textContent) : null;
    }
    return cache[id];
  }

  // times spells out a series' sample times, given evenly spaced as
  // their first, step and number.
  function times(t) {
    if (Array.isArray(t)) return t;
    var out = new Array(t.n);
    for (var k = 0; k < t.n; k++) out[k] = Math.round((t.x0 + k * t.dx) * 1e3) / 1e3;
    return out;
  }

  function figure(v, unit) {
    if (v == null || isNaN(v)) return "–";
    var a = Math.abs(v);
    var s = a >= 1000 ? v.toFixed(0) : a >= 100 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toPrecision(3);
    return unit ? s + " " + unit : s;
  }

  // build turns a chart's spec into uPlot's options and aligned data.
  // spec.data lists the runs' data ids; spec.series, when given, keeps
  // only those series (by name) of each run; spec.labels, when given,
  // prefix each run's series (a case's runs share series names).
  function build(spec) {
    var tables = [], series = [{ label: "Time", value: function (u, v) { return v == null ? "–" : v.toFixed(3) + " s"; } }];
    var units = [], load = null, n = 0;
    spec.data.forEach(function (id, ri) {
      var d = data(id);
      if (!d) return;
      load = load || d.load;
      d.series.forEach(function (s, si) {
        if (spec.series && spec.series.indexOf(s.label) < 0) return;
        if (units.indexOf(s.unit) < 0) units.push(s.unit);
        var axis = units.indexOf(s.unit);
        var colour = spec.labels ? palette[ri % palette.length] : palette[n % palette.length];
        series.push({
          label: spec.labels ? spec.labels[ri] + ": " + s.label : s.label,
          scale: s.unit,
          stroke: colour,
          width: 1.5,
          dash: axis > 0 ? [6, 3] : undefined,
          spanGaps: false,
          points: { show: false },
          value: (function (unit) { return function (u, v) { return figure(v, unit); }; })(s.unit)
        });
        tables.push([times(d.xs[s.x]), s.y]);
        n++;
      });
    });
    if (!tables.length) return null;
    // Series sampled at different times (the probes after the grid) share
    // one x axis; where a series has no sample the line goes on (undefined),
    // and where a probe was lost it breaks (null).
    var aligned = uPlot.join(tables, tables.map(function (t) { return [1]; }));
    var axes = [{ label: "Time (s)" }];
    var scales = { x: { time: false } };
    units.slice(0, 2).forEach(function (unit, i) {
      scales[unit] = { auto: true, range: function (u, lo, hi) { return [Math.min(0, lo), hi > 0 ? hi * 1.05 : 1]; } };
      axes.push({ scale: unit, label: config.axes[unit] || unit, side: i === 0 ? 3 : 1, grid: { show: i === 0 } });
    });
    return { series: series, axes: axes, scales: scales, data: aligned, load: load };
  }

  // loadMarks draws the load's start and end as the static graphs mark them.
  function loadMarks(load) {
    return {
      hooks: {
        draw: function (u) {
          if (!load) return;
          var ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = "#707070";
          ctx.setLineDash([4, 4]);
          ctx.lineWidth = 1;
          load.forEach(function (t) {
            var x = Math.round(u.valToPos(t, "x", true));
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
          });
          ctx.restore();
        }
      }
    };
  }

  function width(el) { return Math.max(200, el.clientWidth || 600); }

  function draw(el) {
    if (el.dataset.drawn) return;
    el.dataset.drawn = "1";
    var b = build(JSON.parse(el.dataset.chart));
    var fig = el.closest("figure");
    if (!b) {
      el.dataset.drawn = "none";
      if (fig) fig.classList.add("nochart");
      return;
    }
    var opts = {
      width: width(el),
      height: 320,
      series: b.series,
      axes: b.axes,
      scales: b.scales,
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      plugins: [loadMarks(b.load)],
      hooks: {
        setScale: [function (u, key) {
          if (key !== "x") return;
          el.dataset.xmin = u.scales.x.min;
          el.dataset.xmax = u.scales.x.max;
        }]
      }
    };
    var u = new uPlot(opts, b.data, el);
    el.dataset.xmin = u.scales.x.min;
    el.dataset.xmax = u.scales.x.max;
    if (fig) fig.classList.add("live");
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        var w = width(el);
        if (Math.abs(w - u.width) > 1) u.setSize({ width: w, height: 320 });
      }).observe(el);
    }
  }

  var charts = document.querySelectorAll("div.chart[data-chart]");
  if (!window.IntersectionObserver) {
    charts.forEach(draw);
    return;
  }
  // A page of hundreds of runs draws a graph only when it comes into view
  // (a run's details opened, the page scrolled to it).
  var seen = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) {
        seen.unobserve(e.target);
        draw(e.target);
      }
    });
  }, { rootMargin: "200px" });
  charts.forEach(function (el) { seen.observe(el); });
})();
