package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"wanlab/internal/snmp"
)

// loadResult is what the load process reports.
type loadResult struct {
	UDPFlows  int    `json:"udp_flows"`
	TCPFlows  int    `json:"tcp_flows"`
	UDPSent   uint64 `json:"udp_sent"`   // datagrams the kernel accepted
	UDPErrors uint64 `json:"udp_errors"` // sends it refused (ENOBUFS, ...)
	TCPBytes  uint64 `json:"tcp_bytes"`  // bytes written to the TCP connections
}

// sinkResult is what the sink process reports.
type sinkResult struct {
	UDPReceived uint64 `json:"udp_received"`
	TCPReceived uint64 `json:"tcp_received"`
	// UDPInErrors is the server namespace's Udp InErrors (/proc/net/snmp):
	// datagrams its kernel dropped on the way to the sink's socket.
	UDPInErrors uint64 `json:"udp_in_errors"`
}

// runLoad is the load process: UDP flows (one connected socket each)
// sending pps datagrams per second in all, in rounds every millisecond,
// and bulk TCP connections writing as fast as the path takes, until
// SIGTERM.
func runLoad(args []string) int {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	dst := fs.String("dst", "", "the sink's address")
	nUDP := fs.Int("udp", 900, "UDP flows")
	nTCP := fs.Int("tcp", 100, "TCP connections")
	pps := fs.Int("pps", 40000, "UDP datagrams per second in all")
	size := fs.Int("size", 200, "UDP payload bytes")
	fs.Parse(args)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)

	res := loadResult{UDPFlows: *nUDP, TCPFlows: *nTCP}
	udp := make([]*net.UDPConn, *nUDP)
	for i := range udp {
		c, err := net.Dial("udp4", net.JoinHostPort(*dst, strconv.Itoa(udpPort)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			return 1
		}
		udp[i] = c.(*net.UDPConn)
	}
	tcp := make([]net.Conn, *nTCP)
	for i := range tcp {
		c, err := net.DialTimeout("tcp4", net.JoinHostPort(*dst, strconv.Itoa(tcpPort)), 10*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			return 1
		}
		tcp[i] = c
	}
	fmt.Println("ready")

	var done atomic.Bool
	var sent, errs, written atomic.Uint64
	var wg sync.WaitGroup
	for _, c := range tcp {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for !done.Load() {
				n, err := c.Write(buf)
				written.Add(uint64(n))
				if err != nil {
					return
				}
			}
		}()
	}
	// Senders: each owns a share of the UDP sockets and sends its share
	// of each millisecond's datagrams round robin.
	const senders = 2
	for k := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []*net.UDPConn
			for i := k; i < len(udp); i += senders {
				mine = append(mine, udp[i])
			}
			if len(mine) == 0 {
				return
			}
			msg := make([]byte, *size)
			perMs := float64(*pps) / senders / 1000
			start, owed, next := time.Now(), 0.0, 0
			for tick := 1; !done.Load(); tick++ {
				owed += perMs
				for ; owed >= 1; owed-- {
					if _, err := mine[next].Write(msg); err != nil {
						errs.Add(1)
					} else {
						sent.Add(1)
					}
					next = (next + 1) % len(mine)
				}
				if d := time.Until(start.Add(time.Duration(tick) * time.Millisecond)); d > 0 {
					time.Sleep(d)
				}
			}
		}()
	}
	<-stop
	done.Store(true)
	for _, c := range tcp {
		c.(*net.TCPConn).CloseWrite()
	}
	wg.Wait()
	for _, c := range tcp {
		c.Close()
	}
	for _, c := range udp {
		c.Close()
	}
	res.UDPSent, res.UDPErrors, res.TCPBytes = sent.Load(), errs.Load(), written.Load()
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

// runSink is the sink process: it counts the UDP datagrams and TCP bytes
// that arrive until SIGTERM.
func runSink(args []string) int {
	fs := flag.NewFlagSet("sink", flag.ExitOnError)
	fs.Parse(args)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{Port: udpPort})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		return 1
	}
	uc.SetReadBuffer(8 << 20)
	ln, err := net.Listen("tcp4", ":"+strconv.Itoa(tcpPort))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		return 1
	}
	inErr0 := udpInErrors()
	fmt.Println("ready")
	var udpN, tcpN atomic.Uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			if _, err := uc.Read(buf); err != nil {
				return
			}
			udpN.Add(1)
		}
	}()
	var conns sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				n, _ := io.Copy(io.Discard, c)
				tcpN.Add(uint64(n))
			}()
		}
	}()
	<-stop
	// The load has stopped and its last datagrams have crossed: take what
	// the socket holds, then close.
	uc.SetReadDeadline(time.Now().Add(time.Second))
	wg.Wait()
	ln.Close()
	conns.Wait()
	res := sinkResult{UDPReceived: udpN.Load(), TCPReceived: tcpN.Load(), UDPInErrors: udpInErrors() - inErr0}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

// udpInErrors reads Udp InErrors from /proc/net/snmp of the process's
// network namespace.
func udpInErrors() uint64 {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0
	}
	v, _ := snmp.Counter(string(b), "Udp", "InErrors")
	return v
}
