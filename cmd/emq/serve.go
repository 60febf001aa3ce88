package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/echomq/emq/dashboard"
)

var dashCmd = &command{
	name: "dash", summary: "the web dashboard: queues, jobs, throughput, actions; /metrics too",
	detail: `Serves the dashboard on --listen (loopback by default). It is read-only
unless --write is given; actions are POSTs carrying a CSRF token. --auth
user:password (or $EMQ_DASH_AUTH) asks for HTTP basic authentication on
every page. Serving actions on an address other than loopback needs --auth.
Throughput (completed and failed jobs per minute, the last hour) is sampled
from INFO emq every --sample while the dashboard runs.`,
	examples: []string{"emq dash", "emq dash --listen 127.0.0.1:8080 --write",
		"EMQ_DASH_AUTH=ops:s3cret emq dash --listen 0.0.0.0:8080 --write --addr 10.0.0.5:7000"},
	maxArgs: 0, serves: true, noJSON: true,
	flags: func(fs *flag.FlagSet, o *options) {
		listenFlag(fs, o, "127.0.0.1:8080")
		fs.BoolVar(&o.write, "write", false, "enable the actions (revive …); read-only without it")
		fs.StringVar(&o.auth, "auth", "", "`user:password` for HTTP basic authentication ($EMQ_DASH_AUTH)")
		fs.DurationVar(&o.sample, "sample", dashboard.DefaultSample, "how often throughput is sampled")
	},
	run: runDash,
}

var metricsCmd = &command{
	name: "metrics", summary: "Prometheus metrics alone on /metrics: queue sizes by state, INFO emq's counters",
	detail: `Each scrape reads a fixed number of O(1) commands per queue and one INFO
per primary; the list of queues is refreshed by a background SCAN. The same
/metrics is on emq dash's listener.`,
	examples: []string{"emq metrics --listen 127.0.0.1:9121", "curl -s 127.0.0.1:9121/metrics | grep emq_queue_jobs"},
	maxArgs:  0, serves: true, noJSON: true,
	flags: func(fs *flag.FlagSet, o *options) { listenFlag(fs, o, "127.0.0.1:9121") },
	run:   runMetrics,
}

func listenFlag(fs *flag.FlagSet, o *options, def string) {
	fs.StringVar(&o.listen, "listen", def, "`host:port` to serve HTTP on")
}

func runDash(ctx context.Context, s *session, _ []string) error {
	if s.o.auth == "" {
		s.o.auth = s.e.getenv("EMQ_DASH_AUTH")
	}
	loopback, err := isLoopback(s.o.listen)
	if err != nil {
		return err
	}
	if !loopback && s.o.auth == "" {
		if s.o.write {
			return usageError("--listen %s is not loopback: serving actions there needs --auth", s.o.listen)
		}
		fmt.Fprintf(s.e.stderr, "emq dash: warning: %s is not loopback and has no --auth: anyone who reaches it reads your queues\n", s.o.listen)
	}
	in, err := s.inspector()
	if err != nil {
		return err
	}
	d, err := dashboard.New(dashboard.Config{Inspector: in, Client: s.c, Write: s.o.write, Auth: s.o.auth,
		Sample: s.o.sample, Logger: slog.New(slog.NewTextHandler(s.e.stderr, nil))})
	if err != nil {
		return usageError("%v", err)
	}
	go d.Run(ctx)
	mode := "read-only"
	if s.o.write {
		mode = "write"
	}
	return serve(ctx, s, d, mode)
}

func runMetrics(ctx context.Context, s *session, _ []string) error {
	if _, err := isLoopback(s.o.listen); err != nil {
		return err
	}
	in, err := s.inspector()
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", dashboard.MetricsHandler(in, 0))
	return serve(ctx, s, mux, "metrics on /metrics")
}

// isLoopback reports whether host:port listens on loopback only.
func isLoopback(listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, usageError("--listen %q: %v", listen, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// shutdownGrace bounds the requests in flight once the run is interrupted.
const shutdownGrace = 5 * time.Second

// serve serves h on --listen until ctx ends.
func serve(ctx context.Context, s *session, h http.Handler, what string) error {
	l, err := net.Listen("tcp", s.o.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(s.e.stderr, "emq: serving http://%s/ (%s) for %s; interrupt to stop\n", l.Addr(), what, s.o.addr)
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
