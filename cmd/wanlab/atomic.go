package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// atomicFile is a file written under a temporary name and renamed into place
// on Commit, so that a reader never sees half a file and an interrupted run
// leaves the previous version (or nothing) rather than a truncated one.
type atomicFile struct {
	*bufio.Writer
	f    *os.File
	path string
}

func createAtomic(path string) (*atomicFile, error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	return &atomicFile{Writer: bufio.NewWriterSize(f, 1<<16), f: f, path: path}, nil
}

// Commit flushes, syncs and renames the file into place.
func (a *atomicFile) Commit() error {
	err := a.Flush()
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.f.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	return nil
}

// Abort discards the temporary file.
func (a *atomicFile) Abort() {
	a.f.Close()
	os.Remove(a.f.Name())
}
