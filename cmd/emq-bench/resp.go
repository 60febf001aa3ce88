package main

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// cmdBuf builds a pipeline of RESP commands in one reusable buffer, counting
// the commands (one reply each) and, when names is set, the names of those
// the server runs at the top level — the ones INFO commandstats times
// without counting a nested command twice.
type cmdBuf struct {
	b     []byte
	n     int       // commands appended since reset
	names *[]string // top-level command names, lowercase, when recording
	multi bool      // inside MULTI: commands are queued, EXEC runs them
}

func (w *cmdBuf) reset() { w.b, w.n = w.b[:0], 0 }

// command starts a command of nargs arguments, the first being name.
func (w *cmdBuf) command(name string, nargs int) {
	w.b = append(w.b, '*')
	w.b = strconv.AppendInt(w.b, int64(nargs), 10)
	w.b = append(w.b, '\r', '\n')
	w.n++
	w.str(name)
	if w.names == nil {
		return
	}
	lower := strings.ToLower(name)
	switch {
	case lower == "multi":
		w.multi = true
	case lower == "exec":
		w.multi = false
	case w.multi:
		return
	}
	for _, seen := range *w.names {
		if seen == lower {
			return
		}
	}
	*w.names = append(*w.names, lower)
}

// str appends one argument.
func (w *cmdBuf) str(s string) {
	w.b = append(w.b, '$')
	w.b = strconv.AppendInt(w.b, int64(len(s)), 10)
	w.b = append(w.b, '\r', '\n')
	w.b = append(w.b, s...)
	w.b = append(w.b, '\r', '\n')
}

// join appends one argument made of parts.
func (w *cmdBuf) join(parts ...[]byte) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	w.b = append(w.b, '$')
	w.b = strconv.AppendInt(w.b, int64(n), 10)
	w.b = append(w.b, '\r', '\n')
	for _, p := range parts {
		w.b = append(w.b, p...)
	}
	w.b = append(w.b, '\r', '\n')
}

// int appends an integer argument.
func (w *cmdBuf) int(v int64) {
	var tmp [20]byte
	w.join(strconv.AppendInt(tmp[:0], v, 10))
}

// replyReader reads replies, counting error replies and keeping the first.
type replyReader struct {
	r       *bufio.Reader
	failure string // the first error reply read, if any
	errors  int    // error replies read
}

// takeFailure returns the first error reply read since the last call, if
// any, and forgets it.
func (rr *replyReader) takeFailure() string {
	f := rr.failure
	rr.failure = ""
	return f
}

// skip reads one whole reply, nested arrays included.
func (rr *replyReader) skip() error {
	line, err := rr.r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("short reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', ':':
		return nil
	case '-':
		rr.errors++
		if rr.failure == "" {
			rr.failure = string(body)
		}
		return nil
	case '$':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		_, err = rr.r.Discard(n + 2)
		return err
	case '*':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := rr.skip(); err != nil {
				return err
			}
		}
		return nil
	}
	return errors.New("unexpected reply type " + strconv.Quote(string(line[:1])))
}
