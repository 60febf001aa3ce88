package torture

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// reply is one RESP2 reply.
type reply struct {
	kind  byte // '+' status, '-' error, ':' integer, '$' bulk, '*' array
	text  string
	n     int64
	null  bool
	elems []reply
}

func (r reply) String() string {
	switch r.kind {
	case '*':
		if r.null {
			return "*nil"
		}
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, " ") + "]"
	case ':':
		return strconv.FormatInt(r.n, 10)
	case '$':
		if r.null {
			return "$nil"
		}
		if len(r.text) > 80 {
			return strconv.Quote(r.text[:80]) + "…"
		}
		return strconv.Quote(r.text)
	}
	return string(r.kind) + r.text
}

// isError reports whether r is an error reply.
func (r reply) isError() bool { return r.kind == '-' }

// conn is a raw RESP connection: it sends any bytes as arguments, which a
// client library might refuse or rewrite.
type conn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

// timeout bounds every round trip: a server that does not answer within it
// fails the test rather than hanging it.
const timeout = 60 * time.Second

func dial(addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, r: bufio.NewReaderSize(c, 1<<16), w: bufio.NewWriterSize(c, 1<<16)}, nil
}

func (c *conn) close() { _ = c.c.Close() }

// do sends one command and reads its reply.
func (c *conn) do(args ...[]byte) (reply, error) {
	replies, err := c.pipeline(1, args...)
	if err != nil {
		return reply{}, err
	}
	return replies[0], nil
}

// pipeline sends one command n times, then reads the n replies.
func (c *conn) pipeline(n int, args ...[]byte) ([]reply, error) {
	_ = c.c.SetDeadline(time.Now().Add(timeout))
	for i := 0; i < n; i++ {
		c.write(args)
	}
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	replies := make([]reply, n)
	for i := range replies {
		var err error
		if replies[i], err = c.read(); err != nil {
			return nil, err
		}
	}
	return replies, nil
}

func (c *conn) write(args [][]byte) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n", len(a))
		c.w.Write(a)
		c.w.WriteString("\r\n")
	}
}

// send sends a command of text arguments without reading its reply (a
// blocking one: read it later).
func (c *conn) send(args ...string) error {
	_ = c.c.SetDeadline(time.Now().Add(timeout))
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	c.write(b)
	return c.w.Flush()
}

// str sends a command of text arguments.
func (c *conn) str(args ...string) (reply, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return c.do(b...)
}

func (c *conn) read() (reply, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return reply{}, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return reply{}, fmt.Errorf("malformed reply line %q", line)
	}
	r := reply{kind: line[0], text: line[1 : len(line)-2]}
	switch r.kind {
	case '+', '-':
		return r, nil
	case ':':
		r.n, err = strconv.ParseInt(r.text, 10, 64)
		return r, err
	case '$':
		n, err := strconv.Atoi(r.text)
		if err != nil || n < -1 {
			return r, fmt.Errorf("malformed bulk length %q", r.text)
		}
		if n == -1 {
			r.null = true
			return r, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return r, err
		}
		r.text = string(buf[:n])
		return r, nil
	case '*':
		n, err := strconv.Atoi(r.text)
		if err != nil || n < -1 {
			return r, fmt.Errorf("malformed array length %q", r.text)
		}
		if n == -1 {
			r.null = true
			return r, nil
		}
		r.elems = make([]reply, n)
		for i := range r.elems {
			if r.elems[i], err = c.read(); err != nil {
				return r, err
			}
		}
		return r, nil
	}
	return r, fmt.Errorf("unknown reply type %q", line)
}
