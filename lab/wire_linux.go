package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// The control socket is a SOCK_SEQPACKET unix socket: every request and
// response is one message, so no framing is needed and passed file
// descriptors stay attached to the message they belong to.
const network = "unixpacket"

// maxMsg bounds a message; a status with its flows, or an exec request
// with a large environment, fits well within it.
const maxMsg = 1 << 20

// maxFDs is the most file descriptors one message carries (stdin, stdout,
// stderr).
const maxFDs = 3

// send writes v as one message, with files passed along.
func send(c *net.UnixConn, v any, files ...*os.File) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	_, _, err = c.WriteMsgUnix(b, oob, nil)
	return err
}

// recv reads one message into v and returns the files passed with it,
// which the caller must close.
func recv(c *net.UnixConn, v any) ([]*os.File, error) {
	b := make([]byte, maxMsg)
	oob := make([]byte, unix.CmsgSpace(maxFDs*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(b, oob)
	if err != nil {
		return nil, err
	}
	files, ferr := parseRights(oob[:oobn])
	switch {
	case ferr != nil:
	case flags&unix.MSG_CTRUNC != 0:
		ferr = errors.New("control socket: too many file descriptors in one message")
	case flags&unix.MSG_TRUNC != 0:
		ferr = fmt.Errorf("control socket: message longer than %d bytes", maxMsg)
	case n == 0:
		ferr = errors.New("control socket: peer closed the connection")
	default:
		ferr = json.Unmarshal(b[:n], v)
	}
	if ferr != nil {
		closeAll(files)
		return nil, ferr
	}
	return files, nil
}

func parseRights(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("fd%d", fd)))
		}
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// peerUID returns the user id of the process at the other end of c.
func peerUID(c *net.UnixConn) (int, error) {
	cred, err := peerCred(c)
	if err != nil {
		return 0, err
	}
	return int(cred.Uid), nil
}

// peerCred returns the credentials of the process at the other end of c,
// as they were when it connected.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	err = rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err == nil {
		err = cerr
	}
	return cred, err
}
