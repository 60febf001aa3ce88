package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/inspect"
	"github.com/valkey-io/valkey-go"
)

// target is what a run connects to and how: the common flags every
// command takes.
type target struct {
	addr, user string
	dbText     string // --db as given; db once checked
	db         int
	sentinel   string // the Sentinel-monitored primary's name; --addr lists Sentinels

	tls               bool
	cacert, cert, key string
	sni               string
	insecure          bool
}

// targetFlags adds the connection's flags to fs, their defaults from the
// environment.
func targetFlags(fs *flag.FlagSet, o *target, e env) {
	addr := e.getenv("EMQ_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	fs.StringVar(&o.addr, "addr", addr, "server `host:port`; for a cluster any node, or several comma-separated; a unix socket's path; with --sentinel the Sentinels ($EMQ_ADDR)")
	fs.StringVar(&o.user, "user", e.getenv("EMQ_USER"), "ACL user ($EMQ_USER); the password is read from $EMQ_PASSWORD")
	db := e.getenv("EMQ_DB")
	if db == "" {
		db = "0"
	}
	fs.StringVar(&o.dbText, "db", db, "the `number` of the database the queues are in ($EMQ_DB)")
	fs.StringVar(&o.sentinel, "sentinel", e.getenv("EMQ_SENTINEL"), "the `name` of a primary Sentinel monitors: --addr lists Sentinels, and failovers are followed ($EMQ_SENTINEL; their password from $EMQ_SENTINEL_PASSWORD)")
	fs.BoolVar(&o.tls, "tls", false, "connect over TLS (--cacert, --cert, --key, --sni and --insecure imply it)")
	fs.StringVar(&o.cacert, "cacert", "", "PEM `file` of the CA to verify the server's certificate with (else the system's)")
	fs.StringVar(&o.cert, "cert", "", "PEM `file` of the client certificate, for a server with tls-auth-clients (with --key)")
	fs.StringVar(&o.key, "key", "", "PEM `file` of the client certificate's private key")
	fs.StringVar(&o.sni, "sni", "", "the server `name` to ask for and verify (else --addr's host)")
	fs.BoolVar(&o.insecure, "insecure", false, "do not verify the server's certificate")
}

// check refuses a target that names no node: --addr is host:port seeds,
// each port 1 … 65535, or one socket path; the database a number from 0;
// a certificate comes with its key.
func (o *target) check() error {
	db, err := strconv.Atoi(o.dbText)
	if err != nil || db < 0 {
		return usageError("--db %q: want a database number from 0 (the default from $EMQ_DB)", o.dbText)
	}
	o.db = db
	switch {
	case (o.cert == "") != (o.key == ""):
		return usageError("--cert and --key: give both, or neither")
	case strings.HasPrefix(o.addr, "//"):
		return usageError("--addr %q: want host:port, or a socket's absolute path", redacted(o.addr))
	case socket(o.addr) && o.sentinel != "":
		return usageError("--sentinel: --addr names Sentinels by host:port, not a socket")
	case socket(o.addr):
		return nil
	}
	for _, seed := range strings.Split(o.addr, ",") {
		if strings.Contains(seed, "://") || strings.ContainsAny(seed, "@?") {
			return usageError("--addr %q: want host:port, not a URL (TLS is --tls, the database --db, the password $EMQ_PASSWORD)", redacted(seed))
		}
		_, port, err := net.SplitHostPort(seed)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
			return usageError("--addr %q: want host:port, a port 1 … 65535 (a cluster: seeds comma-separated)", redacted(seed))
		}
	}
	return nil
}

// redacted is an --addr as a message shows it: what may hold a password
// typed into it left out — before an @, and a URL's query.
func redacted(addr string) string {
	if q := strings.Index(addr, "?"); q >= 0 {
		addr = addr[:q] + "?…"
	}
	at := strings.LastIndex(addr, "@")
	if at < 0 {
		return addr
	}
	start := 0
	if i := strings.Index(addr, "//"); i >= 0 && i < at {
		start = i + len("//")
	}
	return addr[:start] + "…" + addr[at:]
}

// socket reports whether addr is a unix socket's path.
func socket(addr string) bool { return strings.HasPrefix(addr, "/") }

// clientOption is the valkey-go client's options for the target.
func (o *target) clientOption(e env) (valkey.ClientOption, error) {
	opt := valkey.ClientOption{
		InitAddress: strings.Split(o.addr, ","),
		Username:    o.user,
		Password:    e.getenv("EMQ_PASSWORD"),
		SelectDB:    o.db,
	}
	if socket(o.addr) {
		opt.InitAddress = []string{o.addr}
		opt.DialCtxFn = func(ctx context.Context, path string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
			conn, err := d.DialContext(ctx, "unix", path)
			if err != nil || cfg == nil {
				return conn, err
			}
			return tls.Client(conn, cfg), nil
		}
	}
	if o.wantsTLS() {
		cfg, err := o.tlsConfig()
		if err != nil {
			return opt, err
		}
		opt.TLSConfig = cfg
	}
	if o.sentinel != "" {
		opt.Sentinel = valkey.SentinelOption{MasterSet: o.sentinel, Password: e.getenv("EMQ_SENTINEL_PASSWORD"), TLSConfig: opt.TLSConfig,
			// a missed +switch-master would leave the run on the old primary
			TopologyRefreshInterval: topologyRefresh}
	}
	return opt, nil
}

// wantsTLS reports whether the flags ask for TLS: --tls, or any flag
// that shapes it.
func (o *target) wantsTLS() bool {
	return o.tls || o.cacert != "" || o.cert != "" || o.sni != "" || o.insecure
}

// tlsConfig is the TLS configuration the flags ask for.
func (o *target) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{ServerName: o.sni, InsecureSkipVerify: o.insecure, MinVersion: tls.VersionTLS12}
	if o.cacert != "" {
		pem, err := os.ReadFile(o.cacert)
		if err != nil {
			return nil, usageError("--cacert: %v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, usageError("--cacert %s: no PEM certificate in it", o.cacert)
		}
	}
	if o.cert != "" {
		pair, err := tls.LoadX509KeyPair(o.cert, o.key)
		if err != nil {
			return nil, usageError("--cert, --key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// connect opens the valkey-go client: a cluster client when the server is
// one of a cluster.
func (s *session) connect() error {
	if s.vk != nil {
		return nil
	}
	opt, err := s.o.clientOption(s.e)
	if err != nil {
		return err
	}
	// valkey-go bounds the dial and the first command (HELLO) by the
	// dialer's timeout, 5 s unless set: --timeout is the run's bound
	opt.Dialer = net.Dialer{Timeout: s.o.timeout}
	opt.Sentinel.Dialer = opt.Dialer
	opt.DisableCache = true
	opt.DisableRetry = s.noRetry
	// valkey-go reads a cluster's slot map again only when a command
	// fails; a primary the cluster marked failed is dropped from it, and
	// one back since is met by no command of dash or metrics (they read
	// the queues they know): asking now and then finds it again.
	opt.ClusterOption = valkey.ClusterOption{ShardsRefreshInterval: topologyRefresh}
	vk, err := valkey.NewClient(opt)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redacted(s.o.addr), s.o.connectError(err))
	}
	s.vk = vk
	s.in = inspect.New(vk, inspect.Options{Now: s.e.now})
	s.c = client.New(vk)
	return nil
}

// connectError says what an operator can do about a refused connection:
// set $EMQ_PASSWORD for a server that asks for one; give one --addr for
// standalone servers, which valkey-go takes for cluster seeds when there
// are several; ask for TLS of a server that hangs up on a plain greeting.
// Other errors are returned as they are.
func (o *target) connectError(err error) error {
	verr, ok := valkey.IsValkeyErr(err)
	switch {
	case !ok && !o.wantsTLS() && hungUp(err):
		return fmt.Errorf("%w (the server hung up on the greeting: does it want TLS? --tls)", err)
	case !ok && o.cert == "" && (hungUp(err) || strings.Contains(err.Error(), "tls: certificate required")):
		return fmt.Errorf("%w (the server hung up on the TLS greeting: does it want a client certificate? --cert, --key)", err)
	case !ok:
		return err
	case (strings.HasPrefix(verr.Error(), "NOAUTH") || strings.HasPrefix(verr.Error(), "WRONGPASS")) && o.sentinel != "":
		return fmt.Errorf("%w (the password is read from $EMQ_PASSWORD, a Sentinel's from $EMQ_SENTINEL_PASSWORD, the user from --user or $EMQ_USER)", err)
	case strings.HasPrefix(verr.Error(), "NOAUTH"), strings.HasPrefix(verr.Error(), "WRONGPASS"):
		return fmt.Errorf("%w (the password is read from $EMQ_PASSWORD, the user from --user or $EMQ_USER)", err)
	case strings.Contains(o.addr, ",") && strings.Contains(verr.Error(), "cluster support disabled"):
		return errors.New("several --addr are cluster seeds; these nodes have cluster support disabled (give one --addr for a standalone server)")
	}
	return err
}

// hungUp reports whether err is the server closing the connection: what
// a server that wants TLS does with a plain greeting (and, a race with its
// alert, one that wants a client certificate with a TLS greeting without).
func hungUp(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// sentinel reports whether the run's --addr, given no --sentinel, names
// a Sentinel, which answers a data node's commands "unknown command" —
// asked only once a command met that.
func (s *session) sentinel(err error) bool {
	var verr *valkey.ValkeyError
	if s.o.sentinel != "" || s.vk == nil || !errors.As(err, &verr) || !strings.Contains(verr.Error(), "unknown command") {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	role, err := s.vk.Do(ctx, s.vk.B().Role().Build()).ToArray()
	if err != nil || len(role) == 0 {
		return false
	}
	first, _ := role[0].ToString()
	return first == "sentinel"
}
