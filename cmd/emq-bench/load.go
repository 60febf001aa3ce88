package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// conn is one connection of the load generator: it writes operations a
// batch at a time, one write per batch, then reads every reply.
type conn struct {
	nc net.Conn
	rr replyReader
	w  cmdBuf
}

func dial(addr string) (*conn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, rr: replyReader{r: bufio.NewReaderSize(nc, 1<<16)}}, nil
}

func dialAll(addr string, n int) ([]*conn, error) {
	var cs []*conn
	for i := 0; i < n; i++ {
		c, err := dial(addr)
		if err != nil {
			closeAll(cs)
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func closeAll(cs []*conn) {
	for _, c := range cs {
		_ = c.nc.Close()
	}
}

// replyError is a phase the server refused: the first error reply of a
// batch, whose every reply was read, so the connection stays usable.
type replyError struct {
	command string // what was sent
	reply   string // the server's error reply
}

func (e *replyError) Error() string { return fmt.Sprintf("%s replied %q", e.command, e.reply) }

// run does ops operations of v, depth of them in flight. Any error reply
// fails the run: every operation must do its work.
func (c *conn) run(v *variant, g *opGen, ops, depth int) error {
	for done := 0; done < ops; {
		n := min(depth, ops-done)
		c.w.reset()
		for i := 0; i < n; i++ {
			v.write(&c.w, g)
		}
		g.ops += int64(n)
		if _, err := c.nc.Write(c.w.b); err != nil {
			return err
		}
		for i := 0; i < c.w.n; i++ {
			if err := c.rr.skip(); err != nil {
				return err
			}
		}
		if failure := c.rr.takeFailure(); failure != "" {
			return &replyError{command: v.name, reply: failure}
		}
		done += n
	}
	return nil
}

// runPhase does ops operations of v spread over every connection at once,
// connection i using gens[i], and returns the wall time it took.
func runPhase(conns []*conn, v *variant, gens []*opGen, ops, depth int) (time.Duration, error) {
	start := time.Now()
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.run(v, gens[i], share(ops, len(conns), i), depth)
		}()
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

// share is connection i's part of ops operations over n connections.
func share(ops, n, i int) int {
	if i == 0 {
		return ops/n + ops%n
	}
	return ops / n
}

// prepare makes the data the next phase of ops operations of r acts on,
// each connection's share by its own generator, when r has a prepare.
func prepare(conns []*conn, r *row, gens []*opGen, ops int) error {
	if r.prepare == nil {
		return nil
	}
	for i, c := range conns {
		c.w.reset()
		r.prepare(&c.w, gens[i], share(ops, len(conns), i))
		if _, err := c.nc.Write(c.w.b); err != nil {
			return err
		}
		for range c.w.n {
			if err := c.rr.skip(); err != nil {
				return err
			}
		}
		if failure := c.rr.takeFailure(); failure != "" {
			return &replyError{command: r.name + ": preparing", reply: failure}
		}
	}
	return nil
}
