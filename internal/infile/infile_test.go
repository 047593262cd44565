package infile

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRead reads a regular file (also through a symlink) and refuses,
// naming the path and what it is, a device (never read), a directory, a
// FIFO without a writer (which must not block), a socket, a file over the
// bound and a missing file.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "ok")
	if err := os.WriteFile(good, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{good, link} {
		if b, err := Read(p, 10); err != nil || string(b) != "0123456789" {
			t.Errorf("Read(%s, 10) = %q, %v", p, b, err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for path, want := range map[string]string{
		"/dev/zero":                   "/dev/zero is a character device, not a regular file",
		dir:                           dir + " is a directory",
		fifo:                          fifo + " is a FIFO",
		filepath.Join(dir, "missing"): "no such file",
	} {
		if _, err := Read(path, 1<<20); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s) = %v, want an error with %q", path, err, want)
		}
	}
	if _, err := Read(sock, 1<<20); err == nil {
		t.Errorf("Read(%s) of a socket succeeded", sock)
	}
	if _, err := Read(good, 9); err == nil || !strings.Contains(err.Error(), "larger than 9 bytes") {
		t.Errorf("Read over the bound = %v", err)
	}
	if got := Size(1 << 30); got != "1 GiB" {
		t.Errorf("Size(1<<30) = %q", got)
	}
}

// TestOpenLooksFirst: Open refuses what is not a regular file without
// opening it, which for a device runs its driver. A FIFO shows it: a writer
// waiting for a reader is let through by any open for reading.
func TestOpenLooksFirst(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "x.json.gz")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until a reader opens
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	time.Sleep(50 * time.Millisecond) // the writer waits in open
	if _, err := Open(fifo); err == nil || !strings.Contains(err.Error(), "is a FIFO") {
		t.Errorf("Open(FIFO) = %v", err)
	}
	select {
	case <-opened:
		t.Error("Open opened the FIFO it refused")
		return
	case <-time.After(200 * time.Millisecond):
	}
	// Let the writer go.
	if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		<-opened
		r.Close()
	}
}
