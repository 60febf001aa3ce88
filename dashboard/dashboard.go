// Package dashboard is the web dashboard `emq dash` serves: an overview
// of every queue with its counts and the last hour's throughput, a page
// per queue with a tab per state, a page per job, search by job id, and
// the actions an operator takes — revive a job, revive every dead job of
// a queue, delete a job, pause and resume a queue — through the verbs of
// package client. It also serves
// Prometheus metrics ([NewCollector]) on /metrics.
//
// It is read-only unless [Config].Write is set. Every action is a POST
// carrying a CSRF token (an HMAC of a cookie's nonce under a key the
// process draws at start), behind net/http's cross-origin protection; the
// message its redirect carries is signed under the same key for that
// nonce, so a link cannot put words of its own on a page;
// [Config].Auth adds HTTP basic authentication to every page. Pages are
// html/template, their CSS embedded: no script, no build step, nothing
// fetched from elsewhere; every answer forbids other sites to frame it and
// lets a page load only what the dashboard serves, no page is stored by a
// cache, and what another site's page asks for on its own (an image, a
// frame, a fetch) is refused before anything is read.
package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/inspect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Config is what a Dashboard reads and acts through.
type Config struct {
	// Inspector reads the queues.
	Inspector *inspect.Inspector
	// Client runs the actions' verbs; it must talk to the same server.
	Client *client.Client
	// Write enables the actions; without it every POST is refused.
	Write bool
	// Auth is "user:password" for HTTP basic authentication on every
	// page, or "" for none.
	Auth string
	// Sample is how often the throughput chart samples INFO emq and the
	// queues' sizes; DefaultSample when 0.
	Sample time.Duration
	// Timeout bounds the reads of one page, of one scrape of /metrics and
	// of one throughput sample; DefaultTimeout when 0. A page whose reads
	// do not finish in time is an error page, not a hung request.
	Timeout time.Duration
	// Logger logs failed samples and actions; slog.Default() when nil.
	Logger *slog.Logger
}

// DefaultSample is how often a dashboard samples throughput by default.
const DefaultSample = 10 * time.Second

// DefaultTimeout bounds a page's, a scrape's or a sample's reads by
// default: valkey-go retries a read until its context ends, so a server
// that went away would otherwise hold every request open for good.
const DefaultTimeout = 10 * time.Second

// Dashboard is the dashboard's HTTP handler and its throughput sampler.
type Dashboard struct {
	cfg   Config
	pages map[string]*template.Template
	// key signs the CSRF tokens and the actions' messages (see mac).
	key     []byte
	rate    *throughput
	handler http.Handler
}

// New returns a dashboard over cfg.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Inspector == nil || cfg.Client == nil {
		return nil, errors.New("dashboard: an Inspector and a Client are required")
	}
	if cfg.Sample <= 0 {
		cfg.Sample = DefaultSample
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Dashboard{cfg: cfg, key: make([]byte, 32), rate: newThroughput()}
	authenticate, err := Authenticate(cfg.Auth)
	if err != nil {
		return nil, err
	}
	if _, err := rand.Read(d.key); err != nil {
		return nil, err
	}
	if d.pages, err = parsePages(); err != nil {
		return nil, err
	}
	d.handler = authenticate(d.routes())
	return d, nil
}

// ServeHTTP serves the dashboard.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.handler.ServeHTTP(w, r) }

// Run samples throughput every Config.Sample until ctx ends.
func (d *Dashboard) Run(ctx context.Context) {
	tick := time.NewTicker(d.cfg.Sample)
	defer tick.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
		if err := d.rate.sample(sctx, d.cfg.Inspector); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("dashboard: sampling throughput", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// routes is the dashboard's mux, behind cross-origin protection, each
// answer carrying the security headers.
func (d *Dashboard) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(filesOnly{static})))
	mux.Handle("GET /metrics", MetricsHandler(d.cfg.Inspector, d.cfg.Timeout))
	mux.HandleFunc("GET /{$}", d.page(d.overview))
	mux.HandleFunc("GET /queues/{queue}", d.page(d.queuePage))
	mux.HandleFunc("GET /queues/{queue}/jobs/{id}", d.page(d.jobPage))
	mux.HandleFunc("GET /search", d.page(d.search))
	mux.HandleFunc("POST /queues/{queue}/jobs/{id}/revive", d.action(d.revive))
	mux.HandleFunc("POST /queues/{queue}/revive-dead", d.action(d.reviveDead))
	mux.HandleFunc("POST /queues/{queue}/jobs/{id}/delete", d.action(d.remove))
	mux.HandleFunc("POST /queues/{queue}/pause", d.action(d.pause))
	mux.HandleFunc("POST /queues/{queue}/resume", d.action(d.resume))
	mux.HandleFunc("POST /queues/{queue}/schedules/{name}/remove", d.action(d.unrepeat))
	return Secured(http.NewCrossOriginProtection().Handler(mux))
}

// securityHeaders are on every answer. No page may be framed by another
// (clickjacking: a page of another site framing an action's button under
// a lure of its own); a page loads only what the dashboard serves — its
// stylesheet — and runs no inline script, so markup that slipped past the
// templates' escaping could run nothing; a form posts only back to it; and
// no answer is read as another type than it says.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	"X-Frame-Options":         "DENY",
	"X-Content-Type-Options":  "nosniff",
}

// Secured is h with the dashboard's security headers set on each answer:
// the dashboard's own, and what a server puts in front of it answers
// itself (emq dash's authentication and Host checks). A request another
// site's page had the browser send other than by a person going to a
// page of the dashboard (see [fromAnotherSite]) is refused (403) before h
// sees it.
func Secured(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		if fromAnotherSite(r) {
			http.Error(w, "emq: a page of another site asked for this: only a link to a page of the dashboard is followed", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// fromAnotherSite reports whether r is a request a page of another origin
// — another site, or another port of the same host, which a browser
// counts as the same site — made the browser send on its own: an image, a
// frame, a fetch (Sec-Fetch-Site cross-site or same-site, and not the
// navigation of a whole window, Sec-Fetch-Mode navigate to a document).
// The frame-ancestors policy keeps such a page from showing what it asked
// for, and SameSite from acting, but not the server from doing the read:
// a page of <img>s naming the dashboard's search or /metrics would have
// each visitor's browser make the server scan its keyspace or read every
// queue, again and again. A link followed from another site (an alert's
// link to a job's page) is a navigation and is served; a client that is
// no browser sends no Sec-Fetch-Site and is served.
func fromAnotherSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return r.Header.Get("Sec-Fetch-Mode") != "navigate" || r.Header.Get("Sec-Fetch-Dest") != "document"
	}
	return false
}

// filesOnly is an fs.FS whose directories do not exist: http.FileServer
// serves its files and answers 404 for a directory, not a listing.
type filesOnly struct{ fs.FS }

// Open opens name when it is a file.
func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err != nil || st.IsDir() {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return file, nil
}

// page bounds a page's reads by Config.Timeout. The actions are not
// bounded so: a bulk revival runs as long as its queue needs.
func (d *Dashboard) page(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d.cfg.Timeout)
		defer cancel()
		h(w, r.WithContext(ctx))
	}
}

// Authenticate returns what puts a handler behind HTTP basic
// authentication with auth's credentials, "user:password" (both
// non-empty), as Config.Auth puts the dashboard; for auth "", the handler
// as it is.
func Authenticate(auth string) (func(http.Handler) http.Handler, error) {
	if auth == "" {
		return func(h http.Handler) http.Handler { return h }, nil
	}
	user, pass, ok := strings.Cut(auth, ":")
	if !ok || user == "" || pass == "" {
		return nil, errors.New("dashboard: auth is user:password, both non-empty")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			userOK := subtle.ConstantTimeCompare([]byte(u), []byte(user))
			passOK := subtle.ConstantTimeCompare([]byte(p), []byte(pass))
			if !ok || userOK&passOK != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="emq", charset="UTF-8"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// MetricsHandler serves the Prometheus metrics of in's queues and INFO
// emq (see [NewCollector]), as `emq metrics` does alone. A scrape's reads
// are bounded by timeout (DefaultTimeout when 0), by the scrape timeout
// Prometheus sends (X-Prometheus-Scrape-Timeout-Seconds) when it is
// shorter, and by the request: a scrape Prometheus gave up on stops
// reading.
func MetricsHandler(in *inspect.Inspector, timeout time.Duration) http.Handler {
	shared := NewCollector(in, timeout) // its descriptions, made once
	opts := promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := *shared
		c.timeout, c.base = scrapeTimeout(r, shared.timeout), r.Context()
		reg := prometheus.NewRegistry()
		reg.MustRegister(&c)
		promhttp.HandlerFor(reg, opts).ServeHTTP(w, r)
	})
}

// scrapeTimeout is timeout, or the scrape timeout Prometheus sends with r
// when that is shorter.
func scrapeTimeout(r *http.Request, timeout time.Duration) time.Duration {
	s, err := strconv.ParseFloat(r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"), 64)
	if d := time.Duration(s * float64(time.Second)); err == nil && d > 0 && d < timeout {
		return d
	}
	return timeout
}

// csrfCookie holds the nonce a page's CSRF token signs.
const csrfCookie = "emq_csrf"

// csrfToken is the token of the request's nonce, setting a fresh nonce
// cookie when the request has none.
func (d *Dashboard) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && c.Value != "" {
		return d.sign(c.Value)
	}
	nonce := rand.Text()
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: nonce, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return d.sign(nonce)
}

// sign is the CSRF token of nonce.
func (d *Dashboard) sign(nonce string) string { return d.mac("csrf", nonce) }

// mac is the HMAC under the process's key of fields, the first naming
// what it signs ("csrf", "flash"), so that no token of one kind is valid
// as another; each field is length-prefixed, so no two lists of fields
// sign the same bytes.
func (d *Dashboard) mac(fields ...string) string {
	m := hmac.New(sha256.New, d.key)
	for _, f := range fields {
		m.Write(binary.AppendUvarint(nil, uint64(len(f))))
		m.Write([]byte(f))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// flashMAC signs an action's message of kind ("msg" or "err") for the
// browser of CSRF nonce nonce.
func (d *Dashboard) flashMAC(nonce, kind, text string) string {
	return d.mac("flash", nonce, kind, text)
}

// flash is the message of the request's URL when it is one an action
// signed for this browser (see action): its msg, or its err. A message
// the dashboard did not say, or said to another browser, is not shown.
func (d *Dashboard) flash(r *http.Request) (msg, err string) {
	c, cerr := r.Cookie(csrfCookie)
	q := r.URL.Query()
	signed := func(kind string) string {
		text := q.Get(kind)
		if cerr != nil || text == "" || !hmac.Equal([]byte(q.Get("sig")), []byte(d.flashMAC(c.Value, kind, text))) {
			return ""
		}
		return text
	}
	return signed("msg"), signed("err")
}

// checkCSRF reports whether the form's token signs the cookie's nonce.
func (d *Dashboard) checkCSRF(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		return false
	}
	return hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(d.sign(c.Value)))
}

// action wraps a POST handler: refused on a read-only dashboard, refused
// without a valid CSRF token, and followed by a redirect (303) to the
// page it returns, with its message signed for the browser's nonce.
func (d *Dashboard) action(do func(r *http.Request) (back, msg string, err error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !d.cfg.Write {
			http.Error(w, "read-only dashboard: start emq dash with --write to act", http.StatusForbidden)
			return
		}
		// An action's form is a few short fields: a longer body is refused
		// unread, where net/http would keep 32 MiB of a multipart one in
		// memory and write the rest to temporary files, however long, before
		// the token was looked at.
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		err := r.ParseForm() // a url-encoded form; ParseMultipartForm hides its error
		if err == nil {
			if err = r.ParseMultipartForm(maxForm); errors.Is(err, http.ErrNotMultipart) {
				err = nil
			}
		}
		if err != nil {
			status := http.StatusBadRequest
			if tooLong := new(http.MaxBytesError); errors.As(err, &tooLong) {
				status = http.StatusRequestEntityTooLarge
			}
			http.Error(w, "bad form: "+err.Error(), status)
			return
		}
		if !d.checkCSRF(r) {
			http.Error(w, "bad or missing CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
		// An action runs as long as it needs (a bulk revival of a big dead
		// set may take minutes), past the server's write timeout (emq dash's
		// is a minute): its answer — the redirect saying what it did — is
		// given its own bound once it is done, rather than being dropped,
		// the browser left with an empty reply and not a word of what was
		// done.
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{}) // a writer without deadlines keeps its own
		back, msg, err := do(r)
		_ = rc.SetWriteDeadline(time.Now().Add(actionAnswer))
		kind, text := "msg", msg
		if err != nil {
			d.cfg.Logger.Warn("dashboard: action", "path", r.URL.Path, "err", err)
			kind, text = "err", err.Error()
			if unanswered(err) {
				text += " — no reply came, so the server may have acted: reload to look before you try again"
			}
		}
		nonce, _ := r.Cookie(csrfCookie) // checkCSRF found it
		q := url.Values{kind: {text}, "sig": {d.flashMAC(nonce.Value, kind, text)}}
		sep := "?"
		if strings.Contains(back, "?") {
			sep = "&"
		}
		http.Redirect(w, r, back+sep+q.Encode(), http.StatusSeeOther)
	}
}

// actionAnswer bounds the write of an action's answer, once the action is
// done.
const actionAnswer = time.Minute

// maxForm bounds the body of an action's POST, its form.
const maxForm = 64 << 10

// unanswered reports whether err is a call's that was sent and got no
// reply — a timeout, a connection lost — after which the server may have
// acted or not; a refused dial sent nothing.
func unanswered(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	var ne net.Error // a timeout, context.DeadlineExceeded among them
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// queue is a handle on queue name for an action.
func (d *Dashboard) queue(name string) (*client.Queue, error) {
	return d.cfg.Client.Queue(name, nil, client.Policy{}) // the actions mint nothing
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"overview", "queue", "job", "search", "error"} {
		t, err := template.Must(base.Clone()).ParseFS(assets, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}
