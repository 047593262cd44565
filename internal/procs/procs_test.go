package procs

import (
	"runtime"
	"testing"
)

func TestReserve(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	a := Reserve(2)
	if got := runtime.GOMAXPROCS(0); got != was+2 {
		t.Fatalf("one reservation of 2: GOMAXPROCS %d, want %d", got, was+2)
	}
	b := Reserve(3)
	if got := runtime.GOMAXPROCS(0); got != was+5 {
		t.Fatalf("two reservations: GOMAXPROCS %d, want %d", got, was+5)
	}
	a()
	a() // a second call does nothing
	if got := runtime.GOMAXPROCS(0); got != was+3 {
		t.Fatalf("the first released (twice): GOMAXPROCS %d, want %d", got, was+3)
	}
	if none := Reserve(0); runtime.GOMAXPROCS(0) != was+3 {
		t.Fatalf("a reservation of none changed GOMAXPROCS")
	} else {
		none()
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != was {
		t.Fatalf("both released: GOMAXPROCS %d, want %d as before", got, was)
	}
}
