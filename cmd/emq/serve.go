package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/emq/dashboard"
	"github.com/echomq/emq/inspect"
)

var dashCmd = &command{
	name: "dash", summary: "the web dashboard: queues, jobs, throughput, actions; /metrics too",
	detail: `Serves the dashboard on --listen (loopback by default). It is read-only
unless --write is given; actions are POSTs carrying a CSRF token. --auth
user:password (or $EMQ_DASH_AUTH, which ps does not show as it does the
flag) asks for HTTP basic authentication on every page; the dashboard
speaks plain HTTP, so off loopback put a TLS proxy before it. Serving actions on an address other than loopback, or
through a proxy (--allow-host), needs --auth;
on loopback it answers only requests for a loopback name (localhost,
127.0.0.1, [::1]) or a name of --allow-host (a reverse proxy's that passes
its Host on), so no other site's page reaches it by DNS rebinding.
Throughput (completed and failed jobs per minute, the last hour) is sampled
from INFO emq every --sample (at least 1s) while the dashboard runs. Started before its
server, it answers 503 and tries the server every second until it answers.`,
	examples: []string{"emq dash", "emq dash --listen 127.0.0.1:8080 --write",
		"EMQ_DASH_AUTH=ops:s3cret emq dash --listen 0.0.0.0:8080 --write --addr 10.0.0.5:7000"},
	maxArgs: 0, serves: true, noJSON: true,
	flags: func(fs *flag.FlagSet, o *options) {
		listenFlag(fs, o, "127.0.0.1:8080")
		fs.BoolVar(&o.write, "write", false, "enable the actions (revive …); read-only without it")
		fs.StringVar(&o.auth, "auth", "", "`user:password` for HTTP basic authentication; $EMQ_DASH_AUTH keeps it out of ps")
		fs.DurationVar(&o.sample, "sample", dashboard.DefaultSample, "how often throughput is sampled")
	},
	run: runDash,
}

var metricsCmd = &command{
	name: "metrics", summary: "Prometheus metrics alone on /metrics: queue sizes by state, INFO emq's counters",
	detail: `Each scrape reads a fixed number of O(1) commands per queue and one INFO
per primary; the list of queues is refreshed by a background SCAN. The same
/metrics is on emq dash's listener. Started before its server, it answers
503 and tries the server every second until it answers.`,
	examples: []string{"emq metrics --listen 127.0.0.1:9121", "curl -s 127.0.0.1:9121/metrics | grep emq_queue_jobs"},
	maxArgs:  0, serves: true, noJSON: true,
	flags: func(fs *flag.FlagSet, o *options) { listenFlag(fs, o, "127.0.0.1:9121") },
	run:   runMetrics,
}

func listenFlag(fs *flag.FlagSet, o *options, def string) {
	fs.StringVar(&o.listen, "listen", def, "`host:port` to serve HTTP on")
	fs.StringVar(&o.allowHosts, "allow-host", "", "on loopback, the `names` (comma-separated) a request may name besides localhost and loopback IPs: a reverse proxy's")
}

func runDash(ctx context.Context, s *session, _ []string) error {
	if s.o.sample < time.Second {
		// 0 or less would never sample, and every few ns would hold a core
		return usageError("--sample %v: want a duration of at least 1s", s.o.sample)
	}
	if s.o.auth == "" {
		s.o.auth = s.e.getenv("EMQ_DASH_AUTH")
	}
	loopback, err := isLoopback(s.o.listen)
	if err != nil {
		return err
	}
	exposed := !loopback || s.o.allowHosts != "" // a reverse proxy's names: it is reached from elsewhere
	if exposed && s.o.auth == "" {
		switch {
		case s.o.write && !loopback:
			return usageError("--listen %s is not loopback: serving actions there needs --auth", s.o.listen)
		case s.o.write:
			return usageError("--allow-host names a proxy that serves it to others: serving actions through it needs --auth")
		}
		fmt.Fprintf(s.e.stderr, "emq dash: warning: %s is reached from elsewhere (not loopback, or through --allow-host) and has no --auth: anyone who reaches it reads your queues\n", s.o.listen)
	}
	gate, err := dashboard.Authenticate(s.o.auth)
	if err != nil {
		return usageError("--auth: %v", err)
	}
	mode := "read-only"
	if s.o.write {
		mode = "write"
	}
	// the gate asks for --auth's credentials on every page, the one saying
	// the server has not answered yet too: the dashboard has no Auth of its own
	return serve(ctx, s, mode, loopback, gate, func(ctx context.Context, in *inspect.Inspector) (http.Handler, error) {
		d, err := dashboard.New(dashboard.Config{Inspector: in, Client: s.c, Write: s.o.write,
			Sample: s.o.sample, Logger: slog.New(slog.NewTextHandler(s.e.stderr, nil))})
		if err != nil {
			return nil, err
		}
		go d.Run(ctx)
		return d, nil
	})
}

func runMetrics(ctx context.Context, s *session, _ []string) error {
	loopback, err := isLoopback(s.o.listen)
	if err != nil {
		return err
	}
	return serve(ctx, s, "metrics on /metrics", loopback, nil, func(_ context.Context, in *inspect.Inspector) (http.Handler, error) {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", dashboard.MetricsHandler(in, 0))
		return mux, nil
	})
}

// isLoopback reports whether host:port listens on loopback only.
func isLoopback(listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, usageError("--listen %q: %v", listen, err)
	}
	return loopbackName(host), nil
}

// loopbackName reports whether host, a name or an IP without its port, is
// localhost or a loopback IP.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// loopbackHosts answers 403 to a request whose Host header is neither a
// loopback name nor one of allowed (--allow-host: a reverse proxy's name),
// for a listener on loopback. A browser sends the name it fetched: a page
// of another site whose DNS name its owner re-points at 127.0.0.1 (DNS
// rebinding) is same-origin with that name, so it could read the pages and
// their CSRF tokens and post the actions; only a name the operator serves
// under reaches them. Off loopback, --auth is what keeps others out (a
// browser sends no credentials to another name).
func loopbackHosts(h http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host // no port
		}
		host = strings.TrimSuffix(host, ".") // a fully qualified localhost. is localhost
		if !loopbackName(host) && !slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, host) }) {
			http.Error(w, fmt.Sprintf("emq: Host %q is not a loopback name: this listener on loopback answers localhost, 127.0.0.1, [::1] and the names of --allow-host only", r.Host), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// shutdownGrace bounds the requests in flight once the run is interrupted.
const shutdownGrace = 5 * time.Second

// connBounds bound how long a client of emq dash or emq metrics holds a
// connection: its request's headers, its whole request (the form an action
// posts), the answer's write, and a kept-alive connection left idle.
var connBounds = struct{ header, read, write, idle time.Duration }{
	header: 10 * time.Second, read: 30 * time.Second, write: time.Minute, idle: 2 * time.Minute}

// serve serves on --listen, until ctx ends, the handler build makes from
// the session's inspector, behind gate when not nil and, when the listener
// is on loopback, behind loopbackHosts. It listens at once and
// builds once the server answers: started before its server (a machine
// booting both), emq dash and emq metrics answer 503 naming why and try
// again every second, as their pages do when the server goes away later. A
// server that answers with a refusal (a wrong password …) ends the run, as
// for every other command.
func serve(ctx context.Context, s *session, what string, loopback bool, gate func(http.Handler) http.Handler,
	build func(context.Context, *inspect.Inspector) (http.Handler, error)) error {
	l, err := net.Listen("tcp", s.o.listen)
	if err != nil {
		return err
	}
	var current atomic.Pointer[http.Handler]
	use := func(h http.Handler) { current.Store(&h) }
	use(unavailable("connecting to " + redacted(s.o.addr)))
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) })
	if gate != nil {
		h = gate(h)
	}
	if loopback {
		h = loopbackHosts(h, strings.FieldsFunc(s.o.allowHosts, func(r rune) bool { return r == ',' || r == ' ' }))
	}
	h = dashboard.Secured(h) // on its refusals too: a 401, a 403
	srv := &http.Server{Handler: h, ReadHeaderTimeout: connBounds.header, ReadTimeout: connBounds.read,
		WriteTimeout: connBounds.write, IdleTimeout: connBounds.idle}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	// said once the first try's answer is in use, so that a request made
	// after it meets the server's pages when the server is up
	announce := sync.OnceFunc(func() {
		fmt.Fprintf(s.e.stderr, "emq: serving http://%s/ (%s) for %s; interrupt to stop\n", l.Addr(), what, redacted(s.o.addr))
	})
	in, err := waitForServer(ctx, s, func(err error) { use(unavailable(err.Error())); announce() })
	if err == nil && in != nil {
		var built http.Handler
		if built, err = build(ctx, in); err == nil {
			use(built)
			announce()
			select {
			case <-ctx.Done():
			case err = <-served:
				return err
			}
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return err
}

// retryEvery is how often a serving command tries a server that did not
// answer.
const retryEvery = time.Second

// waitForServer connects the session, trying again every retryEvery while
// the server cannot be reached, and calls failed with each such error; it
// returns a nil inspector when ctx ends first, and an error for any other
// failure.
func waitForServer(ctx context.Context, s *session, failed func(error)) (*inspect.Inspector, error) {
	said := ""
	for {
		in, err := s.inspector()
		if err == nil {
			if said != "" {
				fmt.Fprintf(s.e.stderr, "emq: %s answers\n", redacted(s.o.addr))
			}
			return in, nil
		}
		if !unreachable(err) {
			return nil, err
		}
		failed(err)
		if err.Error() != said {
			said = err.Error()
			fmt.Fprintf(s.e.stderr, "emq: %s; trying again every %v\n", terminalText(said), retryEvery)
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(retryEvery):
		}
	}
}

// unreachable is an error of the network — no server listening, none in
// time, a name not resolved yet — rather than a server's refusal.
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF)
}

// unavailable answers every request 503, saying why.
func unavailable(why string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "emq: no server yet: "+why, http.StatusServiceUnavailable)
	})
}
