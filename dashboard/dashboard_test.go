package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/internal/queuetest"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// site is a dashboard served on loopback, and a browser-like client of it
// (cookies kept, redirects not followed).
type site struct {
	url string
	hc  *http.Client
	d   *Dashboard
}

// serveDashboard serves a dashboard over vk with the fixture's clock.
func serveDashboard(t *testing.T, vk valkey.Client, cfg Config) *site {
	t.Helper()
	cfg.Inspector = inspect.New(vk, inspect.Options{Now: func() time.Time { return queuetest.Now }})
	cfg.Client = client.New(vk)
	cfg.Logger = slog.New(slog.DiscardHandler)
	d, err := New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &site{url: srv.URL, hc: hc, d: d}
}

// get fetches path and returns the status and the body.
func (s *site) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := s.hc.Get(s.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// token is the CSRF token a page of the site carries.
func (s *site) token(t *testing.T, path string) string {
	t.Helper()
	_, body := s.get(t, path)
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(t, m, "a form with a CSRF token on %s", path)
	return m[1]
}

// post sends a form and returns the status and where it redirects.
func (s *site) post(t *testing.T, path string, form url.Values, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

func zcard(t *testing.T, s *valkeytest.Server, queue, set string) int64 {
	t.Helper()
	n, err := s.Do("ZCARD", keys.Set(queue, set)).AsInt64()
	require.NoError(t, err)
	return n
}

// TestPages: what each page shows of the fixture.
func TestPages(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	queuetest.Dead(t, s.Client(), "bulk", PageSize+10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	invoices, err := client.New(s.Client()).Queue("invoices", nil, client.Policy{})
	require.NoError(t, err)
	// a start far ahead, and before 2093-09-06, where job ids (and ticks) end
	start := time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = invoices.Repeat(ctx, "monthly", "0 6 1 * *", []byte("bill"), client.RepeatOptions{TZ: "Europe/Berlin", Start: start, Limit: 12})
	require.NoError(t, err)
	_, err = invoices.SetEvents(ctx, 100)
	require.NoError(t, err)
	w := serveDashboard(t, s.Client(), Config{})

	t.Run("the overview lists every queue with its counts", func(t *testing.T) {
		code, body := w.get(t, "/")
		require.Equal(t, http.StatusOK, code)
		for _, q := range []string{"bulk", "emails", "invoices", "payments"} {
			assert.Contains(t, body, `data-queue="`+q+`"`)
		}
		assert.Contains(t, body, `<a href="/queues/emails?state=dead">2</a>`)
		assert.Contains(t, body, `<span class="badge paused">paused</span>`)
		assert.Contains(t, body, "10/1s")
		assert.Contains(t, body, "read-only")
		assert.NotContains(t, body, "<form method=\"post\"", "a read-only overview has no action")
		assert.Contains(t, body, s.Addr, "the header names the server")
	})
	t.Run("a queue page lists a state's jobs, newest death first", func(t *testing.T) {
		code, body := w.get(t, "/queues/emails?state=dead")
		require.Equal(t, http.StatusOK, code)
		first, second := strings.Index(body, f.EmailsDead[0].String()), strings.Index(body, f.EmailsDead[1].String())
		assert.True(t, first > 0 && second > first, "both dead jobs, the later death first")
		assert.Contains(t, body, f.DeadError)
		assert.Contains(t, body, "40m00s ago")
		assert.Contains(t, body, `id="tab-pending" href="?state=pending">pending <span class="n">3</span>`)
	})
	t.Run("the pending tab lists claim order with each job's priority", func(t *testing.T) {
		_, body := w.get(t, "/queues/emails?state=pending")
		var at []int
		for _, id := range []ids.ID{f.EmailsPending[1], f.EmailsPending[2], f.EmailsPending[0]} {
			at = append(at, strings.Index(body, id.String()))
		}
		assert.True(t, at[0] > 0 && at[1] > at[0] && at[2] > at[1], "priority 0 in mint order, then priority 2: %v", at)
		row := body[at[2]:]
		assert.Contains(t, row[:strings.Index(row, "</tr>")], `<td class="num">2</td>`, "the last row's priority")
	})
	t.Run("a queue page lists its schedules and says whether its events are on", func(t *testing.T) {
		_, body := w.get(t, "/queues/invoices")
		assert.Contains(t, body, `<span id="events">events on, about 100 kept</span>`)
		assert.Contains(t, body, "<td>monthly</td>\n<td><code>0 6 1 * *</code> <span class=\"muted\">Europe/Berlin</span></td>")
		assert.Contains(t, body, `<span title="2090-01-01 05:00:00Z">in `, "the first 6:00 in Berlin after the start, 01:00 there")
		assert.Contains(t, body, `<td class="num">0 of 12</td>`)
		_, body = w.get(t, "/queues/emails")
		assert.Contains(t, body, "events off")
		assert.NotContains(t, body, `id="schedules"`, "no schedule: no table")
	})
	t.Run("a queue page pages", func(t *testing.T) {
		_, body := w.get(t, "/queues/bulk?state=dead")
		assert.Equal(t, PageSize, strings.Count(body, `class="job"`))
		assert.Contains(t, body, "jobs 1–50 of 60")
		assert.Contains(t, body, `id="next" href="?state=dead&amp;page=2"`)
		_, body = w.get(t, "/queues/bulk?state=dead&page=2")
		assert.Equal(t, 10, strings.Count(body, `class="job"`))
		assert.Contains(t, body, `id="prev"`)
		assert.NotContains(t, body, `id="next"`)
	})
	t.Run("a bad state or page is a 400", func(t *testing.T) {
		for _, q := range []string{"?state=finished", "?page=0", "?page=-1", "?page=x", "?page=99999999999999999999"} {
			code, _ := w.get(t, "/queues/emails"+q)
			assert.Equal(t, http.StatusBadRequest, code, q)
		}
	})
	t.Run("a page whose first rank int arithmetic cannot reach is a 400, not a wrapped or failed read", func(t *testing.T) {
		for _, at := range []string{"/queues/bulk?state=dead&page=", "/?page="} {
			for _, page := range []string{"368934881474191034", "9223372036854775807", strconv.Itoa(maxPage + 1), "0", "-1", "x"} {
				code, body := w.get(t, at+page)
				assert.Equal(t, http.StatusBadRequest, code, at+page)
				assert.Contains(t, body, "pages are numbered 1 to", at+page)
			}
			code, _ := w.get(t, at+strconv.Itoa(maxPage))
			assert.Equal(t, http.StatusSeeOther, code, "%s: the last page number in range is past the last page", at)
		}
		require.Equal(t, maxPage, math.MaxInt/QueuesPerPage, "the larger of the two pages bounds the numbers")
	})
	t.Run("a page past the last redirects to the last", func(t *testing.T) {
		for path, to := range map[string]string{
			"/queues/bulk?state=dead&page=3":        "/queues/bulk?state=dead&page=2",
			"/queues/bulk?state=dead&page=99999999": "/queues/bulk?state=dead&page=2",
			"/queues/bulk?state=pending&page=2":     "/queues/bulk?state=pending",
			"/queues/a%20b?page=2":                  "/queues/a%20b?state=dead",
		} {
			code, _ := w.get(t, path)
			assert.Equal(t, http.StatusSeeOther, code, path)
			resp, err := w.hc.Get(w.url + path)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, to, resp.Header.Get("Location"), path)
		}
		code, _ := w.get(t, "/queues/bulk?state=dead&page=2")
		assert.Equal(t, http.StatusOK, code, "the last page itself")
	})
	t.Run("a queue that holds nothing and has no setting says so: a mistyped name?", func(t *testing.T) {
		const hint = "holds no job and has no setting (a mistyped name?)"
		code, body := w.get(t, "/queues/emials")
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `<p id="unknown" class="flash note">Queue emials `+hint)
		cl := client.New(s.Client())
		scheduled, err := cl.Queue("scheduled", nil, client.Policy{})
		require.NoError(t, err)
		_, err = scheduled.Repeat(ctx, "daily", "0 6 * * *", []byte("x"), client.RepeatOptions{Start: start})
		require.NoError(t, err)
		listened, err := cl.Queue("listened", nil, client.Policy{})
		require.NoError(t, err)
		_, err = listened.SetEvents(ctx, 10)
		require.NoError(t, err)
		for _, q := range []string{"emails", "bulk", "invoices", "payments", "scheduled", "listened"} {
			_, body = w.get(t, "/queues/"+q)
			assert.NotContains(t, body, hint, q)
		}
	})
	t.Run("a job page shows its row", func(t *testing.T) {
		code, body := w.get(t, "/queues/invoices/jobs/"+f.InvoicesDead.String())
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `<td id="state">dead</td>`)
		assert.Contains(t, body, `<div id="error"><pre class="payload">`+f.InvoicesDeadError+`</pre></div>`)
		assert.Contains(t, body, "invoice 2025-12 for ACME Corp")
		assert.Contains(t, body, "2026-01-01 12:30:00Z (30m00s ago)")
		assert.NotContains(t, body, `id="revive"`, "read-only: no revive button")
	})
	t.Run("a one-byte payload is 1 byte", func(t *testing.T) {
		id := "JOB0000000000000abe"
		require.NoError(t, s.Do("HSET", keys.Job("invoices", id), "state", "pending", "attempts", "0", "payload", "x").Error())
		t.Cleanup(func() { s.Do("DEL", keys.Job("invoices", id)) })
		code, body := w.get(t, "/queues/invoices/jobs/"+id)
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "<h2>Payload <small>1 byte</small></h2>")
	})
	t.Run("a done job's page shows its result and when its row expires", func(t *testing.T) {
		code, body := w.get(t, "/queues/emails/jobs/"+f.EmailsDone.String())
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `<td id="state">done (kept after its ack)</td>`)
		assert.Contains(t, body, "<th>expires</th><td>2100-01-01 00:00:00Z")
		assert.Contains(t, body, `<pre class="payload">250 OK queued as 7F3A2</pre>`)
		assert.Contains(t, body, `href="/queues/emails?state=dead"`, "a done job's queue link opens a tab that exists")
	})
	t.Run("a job that is not there is a 404", func(t *testing.T) {
		for path, note := range map[string]string{"/queues/emails/jobs/" + f.InvoicesDead.String(): "holds no job", "/queues/emails/jobs/JOB1": "is not a job id"} {
			code, body := w.get(t, path)
			assert.Equal(t, http.StatusNotFound, code, path)
			assert.Contains(t, body, note, path)
		}
	})
	t.Run("search by id goes to the job's page", func(t *testing.T) {
		code, _ := w.get(t, "/search?id="+f.PaymentsPending[0].String())
		assert.Equal(t, http.StatusSeeOther, code)
		resp, err := w.hc.Get(w.url + "/search?id=" + f.PaymentsPending[0].String())
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, "/queues/payments/jobs/"+f.PaymentsPending[0].String(), resp.Header.Get("Location"))
	})
	t.Run("search for an unknown or malformed id says so", func(t *testing.T) {
		_, body := w.get(t, "/search?id=JOB00000000000000ff")
		assert.Contains(t, body, "No queue holds job JOB00000000000000ff")
		_, body = w.get(t, "/search?id=nope")
		assert.Contains(t, body, "is not a job id")
	})
	t.Run("search as a user granted one queue's keys names the queues it may not read", func(t *testing.T) {
		vk := s.ClientAs(t, "invoices", "+@all", "~"+keys.Set("invoices", "*"))
		code, body := serveDashboard(t, vk, Config{}).get(t, "/search?id="+f.PaymentsPending[0].String())
		assert.Equal(t, http.StatusOK, code)
		// the queues earlier cases made are named too; never the one it may read
		assert.Regexp(t, "No queue the dashboard may read holds job "+f.PaymentsPending[0].String()+
			"; the server refused reading [^;]*emails, [^;]*payments[^;]* \\(NOPERM\\), which may.", body)
		assert.NotContains(t, body, "invoices")
	})
	t.Run("static CSS is embedded", func(t *testing.T) {
		code, body := w.get(t, "/static/style.css")
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "--dead")
	})
	t.Run("static serves files only: a directory is a 404, not a listing", func(t *testing.T) {
		for _, path := range []string{"/static/", "/static/nope.css"} {
			code, body := w.get(t, path)
			assert.Equal(t, http.StatusNotFound, code, path)
			assert.NotContains(t, body, "style.css", path)
		}
	})
	t.Run("a queue of one job says job, not jobs", func(t *testing.T) {
		_, body := w.get(t, "/queues/invoices")
		assert.Contains(t, body, `<p class="facts">1 job · `)
		_, body = w.get(t, "/queues/emails")
		assert.Contains(t, body, `<p class="facts">7 jobs · `)
	})
}

// TestSecurityHeaders: every answer — a page, the stylesheet, a 404, a
// refused action — forbids framing and loads only the dashboard's own.
func TestSecurityHeaders(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	w := serveDashboard(t, s.Client(), Config{Write: true})
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{http.MethodGet, "/", http.StatusOK},
		{http.MethodGet, "/queues/emails", http.StatusOK},
		{http.MethodGet, "/static/style.css", http.StatusOK},
		{http.MethodGet, "/no/such/page", http.StatusNotFound},
		{http.MethodPost, "/queues/emails/pause", http.StatusForbidden}, // no CSRF token
	} {
		req, err := http.NewRequest(c.method, w.url+c.path, nil)
		require.NoError(t, err)
		resp, err := w.hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, c.code, resp.StatusCode, "%s %s", c.method, c.path)
		// each policy by its own words, not securityHeaders read back:
		// one dropped from the table fails here
		csp := strings.Split(resp.Header.Get("Content-Security-Policy"), "; ")
		assert.ElementsMatch(t, []string{"default-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'",
			"frame-ancestors 'none'"}, csp, "%s %s", c.method, c.path)
		assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), "%s %s", c.method, c.path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), "%s %s", c.method, c.path)
	}
	t.Run("no page is stored: a job's payload is no file of the browser's cache", func(t *testing.T) {
		job := "/queues/emails/jobs/" + f.EmailsDead[0].String()
		for _, path := range []string{"/", "/queues/emails", job, "/search?id=JOB00000000000000ff", job + "x"} {
			resp, err := w.hc.Get(w.url + path)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"), path)
		}
	})
}

// TestRequestsOfAnotherSitesPage: what a page of another site — or of
// another port of the same host — has a browser ask for on its own (an
// image, a frame, a fetch) is refused before anything is read: a search
// for an id no queue holds scans the server's keyspace, /metrics reads
// every queue. A link to the dashboard followed from elsewhere is served,
// as are its own pages' requests and a client that is no browser.
func TestRequestsOfAnotherSitesPage(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	queuetest.Fill(t, s.Client())
	w := serveDashboard(t, s.Client(), Config{Write: true})
	const search = "/search?id=JOB00000000000000ff" // held by no queue: a scan of the keyspace
	get := func(path string, header ...string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, w.url+path, nil)
		require.NoError(t, err)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := w.hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	fetch := func(site, mode, dest string) []string {
		return []string{"Sec-Fetch-Site", site, "Sec-Fetch-Mode", mode, "Sec-Fetch-Dest", dest}
	}
	require.Equal(t, http.StatusOK, get("/")) // discovery's scan, done
	scans := s.Info("commandstats")["cmdstat_scan"]
	for _, c := range []struct {
		path   string
		header []string
	}{
		{search, fetch("cross-site", "no-cors", "image")},
		{search, fetch("same-site", "no-cors", "image")},
		{search, fetch("cross-site", "navigate", "iframe")},
		{search, fetch("same-site", "cors", "empty")},
		{"/metrics", fetch("cross-site", "no-cors", "image")},
		{"/", fetch("cross-site", "no-cors", "script")},
	} {
		assert.Equal(t, http.StatusForbidden, get(c.path, c.header...), "%s %v", c.path, c.header)
	}
	assert.Equal(t, scans, s.Info("commandstats")["cmdstat_scan"], "no search ran")
	_, loc := w.post(t, "/queues/emails/pause", url.Values{"csrf": {w.token(t, "/")}},
		"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document")
	assert.Empty(t, loc, "a form of another site posted: refused")
	for _, header := range [][]string{
		fetch("cross-site", "navigate", "document"), // a link followed from elsewhere
		fetch("same-site", "navigate", "document"),
		fetch("same-origin", "no-cors", "image"), // its own
		fetch("none", "navigate", "document"),    // typed in the address bar
		nil,                                      // no browser
	} {
		assert.Equal(t, http.StatusOK, get("/queues/emails", header...), "%v", header)
	}
}

// TestActions: a read-only dashboard refuses every POST; a write one
// refuses a POST without a valid token or from another origin, and does
// the action through its verb with one.
func TestActions(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	dead := f.EmailsDead[0].String()
	revive := "/queues/emails/jobs/" + dead + "/revive"

	t.Run("a read-only dashboard refuses the POST and writes nothing", func(t *testing.T) {
		ro := serveDashboard(t, s.Client(), Config{})
		_, _ = ro.get(t, "/") // the nonce cookie
		nonce := ""
		for _, c := range ro.hc.Jar.Cookies(mustURL(t, ro.url)) {
			if c.Name == csrfCookie {
				nonce = c.Value
			}
		}
		require.NotEmpty(t, nonce)
		code, _ := ro.post(t, revive, url.Values{"csrf": {ro.d.sign(nonce)}})
		assert.Equal(t, http.StatusForbidden, code, "refused though the token is valid")
		assert.Equal(t, int64(2), zcard(t, s, "emails", "dead"))
	})
	rw := serveDashboard(t, s.Client(), Config{Write: true})
	t.Run("a POST without a token is refused and writes nothing", func(t *testing.T) {
		for _, form := range []url.Values{{}, {"csrf": {"forged"}}} {
			code, _ := rw.post(t, revive, form)
			assert.Equal(t, http.StatusForbidden, code)
		}
		assert.Equal(t, int64(2), zcard(t, s, "emails", "dead"))
	})
	t.Run("a cross-origin POST is refused even with a token", func(t *testing.T) {
		code, _ := rw.post(t, revive, url.Values{"csrf": {rw.token(t, "/queues/emails")}}, "Sec-Fetch-Site", "cross-site")
		assert.Equal(t, http.StatusForbidden, code)
		assert.Equal(t, int64(2), zcard(t, s, "emails", "dead"))
	})
	t.Run("a form longer than an action's is refused unread, even with a token", func(t *testing.T) {
		// multipart, as net/http would keep 32 MiB of in memory and write the
		// rest to temporary files before the token was looked at
		var body strings.Builder
		mw := multipart.NewWriter(&body)
		require.NoError(t, mw.WriteField("csrf", rw.token(t, "/queues/emails")))
		junk, err := mw.CreateFormFile("junk", "junk.bin")
		require.NoError(t, err)
		_, err = junk.Write(make([]byte, 1<<20))
		require.NoError(t, err)
		require.NoError(t, mw.Close())
		req, err := http.NewRequest(http.MethodPost, rw.url+revive, strings.NewReader(body.String()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := rw.hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		assert.Equal(t, int64(2), zcard(t, s, "emails", "dead"))
		code, _ := rw.post(t, revive, url.Values{"csrf": {rw.token(t, "/queues/emails")}, "junk": {strings.Repeat("x", 1<<20)}})
		assert.Equal(t, http.StatusRequestEntityTooLarge, code, "a long url-encoded form too")
		assert.Equal(t, int64(2), zcard(t, s, "emails", "dead"))
	})
	t.Run("the dead tab's bulk button counts one dead job as one, behind a step that says what it does", func(t *testing.T) {
		_, body := rw.get(t, "/queues/invoices?state=dead")
		assert.Contains(t, body, `<summary id="revive-all-open">Revive the dead job…</summary>`)
		assert.Contains(t, body, `<button id="revive-all" type="submit">Revive the dead job</button>`)
		_, body = rw.get(t, "/queues/emails?state=dead")
		assert.Contains(t, body, `<summary id="revive-all-open">Revive all 2 dead jobs…</summary>`)
		assert.Contains(t, body, `<button id="revive-all" type="submit">Revive all 2 dead jobs</button>`)
		assert.Contains(t, body, "runs again")
	})
	t.Run("the overview's bulk button counts a queue's dead jobs, behind a step", func(t *testing.T) {
		_, body := rw.get(t, "/")
		assert.Contains(t, body, `<summary>Revive all dead…</summary>`)
		assert.Contains(t, body, `<button type="submit">Revive all 2 dead jobs</button>`)
		assert.Contains(t, body, `<button type="submit">Revive the dead job</button>`)
	})
	t.Run("revive with a token revives the job and says so", func(t *testing.T) {
		code, loc := rw.post(t, revive, url.Values{"csrf": {rw.token(t, "/queues/emails/jobs/"+dead)}})
		assert.Equal(t, http.StatusSeeOther, code)
		assert.True(t, strings.HasPrefix(loc, "/queues/emails/jobs/"+dead+"?msg=Revived"), loc)
		assert.Equal(t, int64(1), zcard(t, s, "emails", "dead"))
		_, body := rw.get(t, loc)
		assert.Contains(t, body, `<td id="state">pending</td>`)
		assert.Contains(t, body, "it is pending again")
		assert.Regexp(t, `<td id="attempts">[0-9]+ \(0 counted against its budget\)</td>`, body, "revived: no attempt counted yet")
	})
	t.Run("reviving it again reports the refusal", func(t *testing.T) {
		code, loc := rw.post(t, revive, url.Values{"csrf": {rw.token(t, "/")}})
		assert.Equal(t, http.StatusSeeOther, code)
		assert.Contains(t, loc, "err=EMQSTATE")
	})
	t.Run("revive all dead revives every dead job of the queue", func(t *testing.T) {
		code, loc := rw.post(t, "/queues/emails/revive-dead", url.Values{"csrf": {rw.token(t, "/")}})
		assert.Equal(t, http.StatusSeeOther, code)
		assert.Contains(t, loc, "Revived+1+of+1")
		assert.Zero(t, zcard(t, s, "emails", "dead"))
		assert.Equal(t, int64(1), zcard(t, s, "invoices", "dead"), "other queues untouched")
	})
	t.Run("a flash the dashboard did not say is not shown", func(t *testing.T) {
		const spoof = "Security notice: re-login at http://evil.example"
		for _, q := range []url.Values{{"msg": {spoof}}, {"err": {spoof}}, {"msg": {spoof}, "sig": {"forged"}}} {
			code, body := rw.get(t, "/?"+q.Encode())
			assert.Equal(t, http.StatusOK, code)
			assert.Empty(t, flashOf(body), q)
		}
	})
	t.Run("an action's own flash shows only in the browser it answered, as what it was", func(t *testing.T) {
		_, loc := rw.post(t, "/queues/emails/pause", url.Values{"csrf": {rw.token(t, "/")}})
		_, body := rw.get(t, loc)
		assert.Equal(t, "ok: Paused emails: its claims take nothing until it is resumed; jobs already claimed run on.", flashOf(body))

		_, body = serveDashboardAt(t, rw).get(t, loc)
		assert.Empty(t, flashOf(body), "another browser (another CSRF nonce) gets no flash from the link")

		swapped := strings.Replace(loc, "?msg=", "?err=", 1)
		require.NotEqual(t, loc, swapped)
		_, body = rw.get(t, swapped)
		assert.Empty(t, flashOf(body), "a message signed as news is not shown as an error")
	})
}

var flashText = regexp.MustCompile(`<p class="flash (\w+)" id="flash">([^<]*)</p>`)

// flashOf is a page's flash, "kind: text", or "" for none.
func flashOf(body string) string {
	m := flashText.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1] + ": " + m[2]
}

// serveDashboardAt is another browser of s's dashboard: its own cookies.
func serveDashboardAt(t *testing.T, s *site) *site {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := *s.hc
	hc.Jar = jar
	return &site{url: s.url, hc: &hc, d: s.d}
}

// TestSteering: pause and resume a queue (overview and queue page),
// delete a job (job page) and remove a schedule (queue page) through their
// verbs; the pages show the buttons only on a write dashboard, and a POST
// without a token or to a read-only dashboard writes nothing.
func TestSteering(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	rw := serveDashboard(t, s.Client(), Config{Write: true})
	ro := serveDashboard(t, s.Client(), Config{})
	paused := func(queue string) bool {
		v, err := s.Do("HGET", keys.Set(queue, keys.Config), "paused").ToString()
		return err == nil && v == "1"
	}
	pending := f.EmailsPending[0].String()

	t.Run("a write dashboard shows pause, resume and delete", func(t *testing.T) {
		_, body := rw.get(t, "/")
		assert.Contains(t, body, `action="/queues/emails/pause"`)
		assert.Contains(t, body, `action="/queues/payments/resume"`, "payments is paused: it offers resume")
		_, body = rw.get(t, "/queues/payments")
		assert.Contains(t, body, `<button class="resume" type="submit"`)
		_, body = rw.get(t, "/queues/emails/jobs/"+pending)
		assert.Contains(t, body, `action="/queues/emails/jobs/`+pending+`/delete"`)
	})
	t.Run("a read-only dashboard shows none and refuses them", func(t *testing.T) {
		for _, path := range []string{"/", "/queues/emails", "/queues/emails/jobs/" + pending} {
			_, body := ro.get(t, path)
			assert.NotContains(t, body, `method="post"`, path)
		}
		for _, path := range []string{"/queues/emails/pause", "/queues/payments/resume", "/queues/emails/jobs/" + pending + "/delete"} {
			code, _ := ro.post(t, path, url.Values{"csrf": {"x"}})
			assert.Equal(t, http.StatusForbidden, code, path)
		}
		assert.False(t, paused("emails"))
		assert.True(t, paused("payments"))
		assert.Equal(t, int64(3), zcard(t, s, "emails", "pending"))
	})
	t.Run("a POST without a token pauses nothing", func(t *testing.T) {
		code, _ := rw.post(t, "/queues/emails/pause", url.Values{"from": {"overview"}})
		assert.Equal(t, http.StatusForbidden, code)
		assert.False(t, paused("emails"))
	})
	for _, c := range []struct {
		name, path, from, want string
		paused                 bool
	}{
		{"pause from the overview pauses and goes back there", "/queues/emails/pause", "overview", "/?msg=Paused+emails", true},
		{"pausing a paused queue says so", "/queues/emails/pause", "", "/queues/emails?msg=emails+was+paused+already", true},
		{"resume from the queue page resumes and goes back there", "/queues/emails/resume", "", "/queues/emails?msg=Resumed+emails", false},
		{"resuming a running queue says so", "/queues/emails/resume", "overview", "/?msg=emails+was+not+paused", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, loc := rw.post(t, c.path, url.Values{"csrf": {rw.token(t, "/")}, "from": {c.from}})
			assert.Equal(t, http.StatusSeeOther, code)
			assert.True(t, strings.HasPrefix(loc, c.want), loc)
			assert.Equal(t, c.paused, paused("emails"))
		})
	}
	t.Run("a dead id whose row is gone offers Drop, not Revive, and the drop clears it", func(t *testing.T) {
		stray := "JOB0000000000000abc"
		require.NoError(t, s.Do("ZADD", "emq:{emails}:dead", "1", stray).Error())
		code, body := rw.get(t, "/queues/emails?state=dead")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `action="/queues/emails/jobs/`+stray+`/delete"`)
		assert.NotContains(t, body, `action="/queues/emails/jobs/`+stray+`/revive"`)
		before := zcard(t, s, "emails", "dead")
		code, loc := rw.post(t, "/queues/emails/jobs/"+stray+"/delete", url.Values{"csrf": {rw.token(t, "/")}, "state": {"dead"}})
		assert.Equal(t, http.StatusSeeOther, code)
		assert.True(t, strings.HasPrefix(loc, "/queues/emails?state=dead&msg=Deleted+"+stray+"."), loc)
		assert.Equal(t, before-1, zcard(t, s, "emails", "dead"))
	})
	t.Run("a dead member that is no JOB id offers neither Drop nor Revive: no verb acts on it", func(t *testing.T) {
		const stray = "not-a-job"
		require.NoError(t, s.Do("ZADD", "emq:{emails}:dead", "1", stray).Error())
		require.NoError(t, s.Do("HSET", keys.Job("emails", stray), "state", "dead", "attempts", "3").Error())
		t.Cleanup(func() { s.Do("ZREM", "emq:{emails}:dead", stray); s.Do("DEL", keys.Job("emails", stray)) })
		code, body := rw.get(t, "/queues/emails?state=dead")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `<code>`+stray+`</code></a> <span class="muted">not a job id</span>`)
		assert.NotContains(t, body, `action="/queues/emails/jobs/`+stray+`/delete"`)
		assert.NotContains(t, body, `action="/queues/emails/jobs/`+stray+`/revive"`)
	})
	t.Run("delete removes the job and goes back to its state's tab", func(t *testing.T) {
		path := "/queues/emails/jobs/" + pending + "/delete"
		code, loc := rw.post(t, path, url.Values{"csrf": {rw.token(t, "/")}, "state": {"pending"}})
		assert.Equal(t, http.StatusSeeOther, code)
		assert.True(t, strings.HasPrefix(loc, "/queues/emails?state=pending&msg=Deleted+"+pending+".&sig="), loc)
		assert.Equal(t, int64(2), zcard(t, s, "emails", "pending"))
		code, _ = rw.get(t, "/queues/emails/jobs/"+pending)
		assert.Equal(t, http.StatusNotFound, code)

		code, loc = rw.post(t, path, url.Values{"csrf": {rw.token(t, "/")}})
		assert.Equal(t, http.StatusSeeOther, code)
		assert.Contains(t, loc, "/queues/emails?err=queue+emails+holds+no+job")
	})
	t.Run("a schedule's Remove removes it through EMQ.UNREPEAT; a read-only dashboard offers and does none", func(t *testing.T) {
		const name = "daily/report" // a slash, escaped in the path
		require.NoError(t, s.Do("EMQ.REPEAT", "3", keys.Repeat("emails", name), keys.Set("emails", keys.Repeats), keys.Set("emails", keys.Config),
			"@daily", "", "p", "0", "0", "0", "0").Error())
		listed := func() int64 {
			n, err := s.Do("ZCARD", keys.Set("emails", keys.Repeats)).AsInt64()
			require.NoError(t, err)
			return n
		}
		path := "/queues/emails/schedules/daily%2Freport/remove"
		_, body := rw.get(t, "/queues/emails")
		assert.Contains(t, body, `action="`+path+`"`)
		_, body = ro.get(t, "/queues/emails")
		assert.Contains(t, body, `<table id="schedules">`)
		assert.NotContains(t, body, `method="post"`)
		code, _ := ro.post(t, path, url.Values{"csrf": {"x"}})
		assert.Equal(t, http.StatusForbidden, code)
		code, _ = rw.post(t, path, url.Values{})
		assert.Equal(t, http.StatusForbidden, code, "no token")
		assert.Equal(t, int64(1), listed())

		code, loc := rw.post(t, path, url.Values{"csrf": {rw.token(t, "/")}})
		assert.Equal(t, http.StatusSeeOther, code)
		assert.True(t, strings.HasPrefix(loc, "/queues/emails?msg=Removed+the+schedule+daily%2Freport"), loc)
		assert.Zero(t, listed())
		code, loc = rw.post(t, path, url.Values{"csrf": {rw.token(t, "/")}})
		assert.Equal(t, http.StatusSeeOther, code)
		assert.Contains(t, loc, "/queues/emails?err=queue+emails+has+no+schedule+daily%2Freport")
	})
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}

// TestAuth: with Auth set, every page and /metrics asks for it.
func TestAuth(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	w := serveDashboard(t, s.Client(), Config{Auth: "ops:s3cret"})
	for _, path := range []string{"/", "/metrics", "/static/style.css"} {
		for _, c := range []struct {
			user, pass string
			want       int
		}{{"", "", http.StatusUnauthorized}, {"ops", "wrong", http.StatusUnauthorized}, {"ops", "s3cret", http.StatusOK}} {
			req, err := http.NewRequest(http.MethodGet, w.url+path, nil)
			require.NoError(t, err)
			if c.user != "" {
				req.SetBasicAuth(c.user, c.pass)
			}
			resp, err := w.hc.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, c.want, resp.StatusCode, "%s as %q:%q", path, c.user, c.pass)
		}
	}
	_, err := New(Config{Inspector: inspect.New(s.Client(), inspect.Options{}), Client: client.New(s.Client()), Auth: "nopassword"})
	assert.Error(t, err, "auth is user:password")
}

// TestMetrics: /metrics has every queue's sizes by state and schedules,
// and INFO emq's fields, counters as counters; a server that cannot be
// read fails it.
func TestMetrics(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	require.NoError(t, s.Do("EMQ.REPEAT", "3", keys.Repeat("emails", "nightly"), keys.Set("emails", keys.Repeats), keys.Set("emails", keys.Config),
		"@daily", "", "p", "0", "0", "0", "0").Error())
	// emails' delayed job came due and its lease passed, and no worker
	// claimed since: both still in their sets
	past := strconv.FormatInt(queuetest.Now.Add(-time.Minute).UnixMilli(), 10)
	require.NoError(t, s.Do("ZADD", keys.Set("emails", keys.DelayedSet), "XX", past, f.EmailsDelayed.String()).Error())
	require.NoError(t, s.Do("ZADD", keys.Set("emails", keys.ActiveSet), "XX", past, f.EmailsActive.String()).Error())
	w := serveDashboard(t, s.Client(), Config{})
	code, body := w.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, line := range []string{
		`emq_queues 3`,
		`emq_queue_jobs{queue="emails",state="dead"} 2`,
		`emq_queue_jobs{queue="emails",state="pending"} 3`,
		`emq_queue_paused{queue="payments"} 1`,
		`emq_queue_rate_limit{queue="payments"} 10`,
		`emq_queue_rate_window_seconds{queue="payments"} 1`,
		`emq_queue_oldest_pending_age_seconds{queue="emails"} 3594`,
		`emq_queue_jobs{queue="emails",state="delayed"} 1`,
		`emq_queue_delayed_due{queue="emails"} 1`,
		`emq_queue_active_expired{queue="emails"} 1`,
		`emq_queue_delayed_due{queue="invoices"} 0`,
		`emq_queue_schedules{queue="emails"} 1`,
		`emq_queue_schedules{queue="invoices"} 0`,
		`# TYPE emq_jobs_dead_total counter`,
		`emq_jobs_dead_total{node="` + s.Addr + `"} 3`,
		`emq_node_up{node="` + s.Addr + `"} 1`,
		`# TYPE emq_blocked_workers gauge`,
	} {
		assert.Contains(t, body, line+"\n")
	}
	t.Run("verbs and codes are labels of a few families, each with a HELP of its own", func(t *testing.T) {
		p := expfmt.NewTextParser(model.UTF8Validation)
		families, err := p.TextToMetricFamilies(strings.NewReader(body))
		require.NoError(t, err, "the exposition parses")
		for _, f := range []string{"emq_calls_total", "emq_calls_ok_total", "emq_calls_refused_total", "emq_refusals_total", "emq_go_allocs_total"} {
			require.Contains(t, families, f)
			assert.Equal(t, dto.MetricType_COUNTER, families[f].GetType(), f)
		}
		node := `node="` + s.Addr + `"`
		for _, line := range []string{
			`emq_calls_total{` + node + `,verb="enqueue"} `,
			`emq_calls_ok_total{` + node + `,verb="enqueue"} `,
			`emq_calls_refused_total{` + node + `,verb="enqueue"} 0`,
			`emq_refusals_total{code="EMQLAYOUT",` + node + `} 0`,
			`emq_refusals_total{code="ERR",` + node + `} 0`,
		} {
			assert.Contains(t, body, line)
		}
		helps := map[string]string{}
		for name, f := range families {
			assert.NotRegexp(t, `^emq_(calls_enqueue|ok_|refused_)|total_.*_total`, name, "a verb, a code or total twice in a name")
			assert.NotContains(t, f.GetHelp(), "INFO emq's", name)
			assert.NotContains(t, helps, f.GetHelp(), "%s has the HELP of %s", name, helps[f.GetHelp()])
			helps[f.GetHelp()] = name
		}
		assert.Less(t, len(families), 60, "families")
	})
	t.Run("the exposition keeps Prometheus' naming rules (promlint)", func(t *testing.T) {
		problems, err := promlint.New(strings.NewReader(body)).Lint()
		require.NoError(t, err)
		assert.Empty(t, problems)
	})

	s.Stop()
	code, _ = w.get(t, "/metrics")
	assert.Equal(t, http.StatusInternalServerError, code)
}

// TestServerGone: once the server goes away, every page answers an error
// page naming the failure after Config.Timeout, and /metrics fails, rather
// than hold the request open.
func TestServerGone(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	// a client of its own: the server's goes with it, this one retries
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(vk.Close)
	w := serveDashboard(t, vk, Config{Timeout: 2 * time.Second})
	job := f.EmailsDead[0].String()
	pages := []string{"/", "/queues/emails", "/queues/emails/jobs/" + job, "/search?id=" + job}
	for _, path := range pages {
		code, _ := w.get(t, path)
		require.Contains(t, []int{http.StatusOK, http.StatusSeeOther}, code, path)
	}
	s.Stop()
	for _, path := range pages {
		t.Run("page "+path+" is a 503 naming the failure", func(t *testing.T) {
			code, body := w.get(t, path) // the client gives up after 30 s: a hung page fails here
			assert.Equal(t, http.StatusServiceUnavailable, code)
			assert.Contains(t, body, `<p class="flash err" id="error">`)
			// a new connection is refused; one the pool held when the server went is reset (or
			// closed: EOF, broken pipe) on its first use
			assert.Regexp(t, `id="error">[^<]*(connection refused|context deadline exceeded|connection reset by peer|broken pipe|EOF)`, body, "the reason")
			assert.Contains(t, body, `<a class="brand" href="/">emq</a>`, "an error page in the layout")
		})
	}
	t.Run("/metrics fails", func(t *testing.T) {
		code, _ := w.get(t, "/metrics")
		assert.Equal(t, http.StatusInternalServerError, code)
	})
	t.Run("a server that held no queue: its pages are a 503 too, not an empty list", func(t *testing.T) {
		empty := valkeytest.Start(t, valkeytest.Options{})
		vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{empty.Addr}, DisableCache: true})
		require.NoError(t, err)
		t.Cleanup(vk.Close)
		w := serveDashboard(t, vk, Config{Timeout: 2 * time.Second})
		code, body := w.get(t, "/")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "No queue found")
		empty.Stop()
		for _, path := range []string{"/", "/search?id=" + job} {
			code, _ := w.get(t, path)
			assert.Equal(t, http.StatusServiceUnavailable, code, path)
		}
	})
}

// TestActionUnanswered: an action whose call got no reply (the server
// stalled past the client's timeout) says the server may have acted, and
// it did; one refused as the dial failed — nothing sent — does not say so.
func TestActionUnanswered(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	queuetest.Fill(t, s.Client())
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true,
		ConnWriteTimeout: 500 * time.Millisecond, Dialer: net.Dialer{Timeout: 500 * time.Millisecond}})
	require.NoError(t, err)
	t.Cleanup(vk.Close)
	w := serveDashboard(t, vk, Config{Write: true, Timeout: 2 * time.Second})
	csrf := w.token(t, "/")
	for _, action := range []string{"pause", "resume"} { // the client knows the node has the verbs
		code, _ := w.post(t, "/queues/emails/"+action, url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, code)
	}
	thaw := s.Freeze(t)
	_, loc := w.post(t, "/queues/emails/pause", url.Values{"csrf": {csrf}})
	thaw()
	_, body := w.get(t, loc)
	// Whether the server then applies the pause depends on where the call
	// was when the wait ended — sent, or still in the client — which is
	// why the flash can only say it may have.
	assert.Contains(t, flashOf(body), "no reply came, so the server may have acted: reload to look before you try again")

	s.Stop()
	// The first calls may meet the connections the server closed (EOF:
	// unknown); once valkey-go dials again, the dial is refused.
	var flash string
	for try := 0; try < 10 && !strings.Contains(flash, "connection refused"); try++ {
		_, loc = w.post(t, "/queues/emails/resume", url.Values{"csrf": {csrf}})
		_, body = w.get(t, loc)
		flash = flashOf(body)
	}
	assert.Contains(t, flash, "connection refused")
	assert.NotContains(t, flash, "may have acted", "a refused dial sent nothing")
}

// TestMetricsScrapeTimeout: a scrape's reads end at the scrape timeout
// Prometheus sends, when shorter than the dashboard's own bound: a server
// that stopped answering fails the scrape then (500), not when Prometheus
// has given up on it long since.
func TestMetricsScrapeTimeout(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	queuetest.Fill(t, s.Client())
	w := serveDashboard(t, s.Client(), Config{Timeout: 20 * time.Second})
	code, _ := w.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	thaw := s.Freeze(t)
	defer thaw()
	req, err := http.NewRequest(http.MethodGet, w.url+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "0.5")
	began := time.Now()
	resp, err := w.hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Less(t, time.Since(began), 5*time.Second, "the scrape waited out the dashboard's 20 s")
}

// TestMetricsLabels: every queue name is a UTF-8 label value — a name that
// is not UTF-8 has its stray bytes escaped — so no name fails the scrape
// and the other queues' series are all there; of two names sharing a
// label, the first in byte order has the series.
func TestMetricsLabels(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	queuetest.Fill(t, s.Client())
	for _, c := range []struct {
		name string
		jobs int
	}{
		{`bad\xffname`, 2}, // UTF-8, spelling the escape out: first in byte order
		{"bad\xffname", 1}, // not UTF-8: its label is the first's, so no series of its own
		{"bad\xffname\xfe", 1},
		{"half\xe2\x82", 1},
		{"café", 1},
	} {
		for i := range c.jobs {
			require.NoError(t, s.Do("ZADD", keys.Pending(c.name), "0", fmt.Sprintf("JOB000000000000000%d", i)).Error())
		}
	}
	w := serveDashboard(t, s.Client(), Config{})
	code, body := w.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code, body)
	for _, line := range []string{
		`emq_queues 8`,
		`emq_queue_jobs{queue="emails",state="dead"} 2`,
		`emq_queue_jobs{queue="bad\\xffname",state="pending"} 2`,
		`emq_queue_jobs{queue="bad\\xffname\\xfe",state="pending"} 1`,
		`emq_queue_jobs{queue="half\\xe2\\x82",state="pending"} 1`,
		`emq_queue_jobs{queue="café",state="pending"} 1`,
		`emq_jobs_dead_total{node="` + s.Addr + `"} 3`,
	} {
		assert.Contains(t, body, line+"\n")
	}
	assert.Equal(t, 1, strings.Count(body, `emq_queue_paused{queue="bad\\xffname"}`), "one series per label")
}

// TestUnreadableQueue: a queue with a key of another type under its layout
// is shown as unreadable — a row naming the error on the overview, an
// emq_queue_unreadable series — while every other queue is listed and
// counted, and throughput is still sampled.
func TestUnreadableQueue(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	queuetest.Fill(t, s.Client())
	require.NoError(t, s.Do("SET", keys.Pending("wt"), "notazset").Error())
	// a dead job's row written by hand as a string, beside a healthy job
	const strayRow, healthy = "JOB0018f2a4c1f00030", "JOB0018f2a4c1f00031"
	require.NoError(t, s.Do("ZADD", keys.Set("wr", "dead"), "1000", strayRow).Error())
	require.NoError(t, s.Do("SET", keys.Job("wr", strayRow), "str").Error())
	require.NoError(t, s.Do("EMQ.ENQUEUE", "2", keys.Job("wr", healthy), keys.Pending("wr"), healthy, "ok").Error())
	w := serveDashboard(t, s.Client(), Config{Write: true})
	for _, c := range []struct {
		path string
		code int
		has  []string
	}{
		{"/", http.StatusOK, []string{`data-queue="emails"`, `<a href="/queues/emails?state=dead">2</a>`, `data-queue="payments"`,
			`<td colspan="8" class="error unreadable">cannot read this queue: queue wt: ZCARD pending: WRONGTYPE`}},
		{"/metrics", http.StatusOK, []string{`emq_queue_unreadable{queue="wt"} 1`, `emq_queue_jobs{queue="emails",state="dead"} 2`,
			`emq_queues 5`}},
		{"/queues/wt", http.StatusBadGateway, []string{`id="error">queue wt: ZCARD pending: WRONGTYPE`}},
		{"/queues/emails", http.StatusOK, []string{`id="tab-pending"`}},
		{"/queues/wr", http.StatusOK, []string{`<code>` + strayRow + `</code></a> <span class="muted">row not a hash</span>`,
			`title="its row is a key of another type, written by hand: DEL it">—</span>`}},
		{"/queues/wr?state=pending", http.StatusOK, []string{`<code>` + healthy + `</code>`}},
		{"/queues/wr/jobs/" + strayRow, http.StatusBadGateway, []string{"The server refused a read", "WRONGTYPE"}},
	} {
		t.Run(c.path, func(t *testing.T) {
			code, body := w.get(t, c.path)
			assert.Equal(t, c.code, code)
			for _, h := range c.has {
				assert.Contains(t, body, h)
			}
		})
	}
	t.Run("a throughput sample still counts", func(t *testing.T) {
		tp := newThroughput()
		in := inspect.New(s.Client(), inspect.Options{})
		require.NoError(t, tp.sample(context.Background(), in))
		assert.NotEmpty(t, tp.last, "the counters were read")
		assert.Contains(t, tp.depths, "emails")
		assert.NotContains(t, tp.depths, "wt")
	})
}

// TestPrimaryDown: on a cluster with a primary that does not answer, the
// pages warn which, the overview lists the other primaries' queues, and
// /metrics answers with emq_node_up 0 for it.
func TestPrimaryDown(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	queuetest.Fill(t, cl.Client())
	down := cl.Owner(t, cl.Slot(t, keys.Pending("emails")))
	w := serveDashboard(t, cl.Client(), Config{Timeout: 5 * time.Second})
	code, _ := w.get(t, "/") // every primary answers: the list of them is kept
	require.Equal(t, http.StatusOK, code)
	down.Stop()
	var body string
	code, body = w.get(t, "/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `<p class="flash err" id="down">inspect: primary `+down.Addr+` did not answer`)
	assert.NotContains(t, body, `data-queue="emails"`)
	code, body = w.get(t, "/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `emq_node_up{node="`+down.Addr+`"} 0`+"\n")
	assert.Len(t, regexp.MustCompile(`emq_node_up\{node="[^"]+"\} 1\n`).FindAllString(body, -1), 2, "the two that answer are up")
	assert.NotContains(t, body, `queue="emails"`)
}

// TestNodeStalled: with a node of a cluster that neither answers nor
// closes its connections (stopped: SIGSTOP), a scrape and each page wait
// for it once, 2 s at most, then not again while it stays silent; a
// replica stalled fails no scrape and warns of nothing (its copies are not
// read), a primary stalled is emq_node_up 0. (Before: each scrape took 4 s
// with a replica stalled, and one in three failed at its 10 s bound
// naming a primary that answered; a page took 6 s with a primary stalled.)
func TestNodeStalled(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 1, valkeytest.Options{Config: []string{"cluster-node-timeout", "60000"}})
	queuetest.Fill(t, cl.Client())
	w := serveDashboard(t, cl.ClientOfEveryNode(t, valkey.ClientOption{}), Config{})
	code, _ := w.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	timedGet := func(t *testing.T, path string) (int, string, time.Duration) {
		began := time.Now()
		code, body := w.get(t, path)
		return code, body, time.Since(began)
	}
	reads := func(t *testing.T, up int, down, queue string) {
		var total time.Duration
		for i, path := range []string{"/metrics", "/metrics", "/", "/metrics", "/queues/" + queue} {
			code, body, took := timedGet(t, path)
			assert.Equal(t, http.StatusOK, code, "%d %s: %s", i, path, body)
			assert.Less(t, took, 4*time.Second, "%d %s: one wait of 2 s at most", i, path)
			if i > 0 {
				assert.Less(t, took, 1500*time.Millisecond, "%d %s: the node, silent already, is not waited on again", i, path)
			}
			total += took
			if path != "/metrics" {
				continue
			}
			assert.Len(t, regexp.MustCompile(`emq_node_up\{node="[^"]+"\} 1\n`).FindAllString(body, -1), up, "%d: the primaries read", i)
			if down != "" {
				assert.Contains(t, body, `emq_node_up{node="`+down+`"} 0`+"\n", i)
			} else {
				assert.NotRegexp(t, `emq_node_up\{node="[^"]+"\} 0\n`, body, i)
				assert.Contains(t, body, `emq_queue_jobs{queue="emails",state="dead"} 2`, i)
			}
		}
		assert.Less(t, total, 6*time.Second, "the five reads")
	}
	t.Run("a replica stalled", func(t *testing.T) {
		thaw := cl.Replicas[1].Freeze(t)
		defer thaw()
		reads(t, 3, "", "emails")
	})
	t.Run("a primary stalled", func(t *testing.T) {
		down := cl.Owner(t, cl.Slot(t, keys.Pending("emails")))
		other := "payments" // a queue of another primary: its page reads no key of the one stalled
		if cl.Owner(t, cl.Slot(t, keys.Pending(other))) == down {
			other = "invoices"
		}
		require.NotEqual(t, down, cl.Owner(t, cl.Slot(t, keys.Pending(other))))
		thaw := down.Freeze(t)
		defer thaw()
		reads(t, 2, down.Addr, other)
		code, body := w.get(t, "/")
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `<p class="flash err" id="down">inspect: primary `+down.Addr+` did not answer`)
	})
}

// TestThroughput: the chart counts the acks and failures between samples
// in the minute they happened, summed over the nodes, and each queue's
// sizes draw a sparkline.
func TestThroughput(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	now := time.Date(2026, 3, 1, 10, 0, 30, 0, time.UTC)
	in := inspect.New(s.Client(), inspect.Options{Now: func() time.Time { return now }})
	tp := newThroughput()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := ids.NewMinter(1)
	require.NoError(t, err)
	q, err := client.New(s.Client()).Queue("work", m, client.Policy{MaxAttempts: 1})
	require.NoError(t, err)
	_, err = q.EnqueueMany(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")})
	require.NoError(t, err)

	require.NoError(t, tp.sample(ctx, in))
	c := tp.chart(now)
	assert.False(t, c.Sampled, "one sample is only a baseline")
	assert.Len(t, c.Bars, window)

	jobs, err := q.Claim(ctx, 4)
	require.NoError(t, err)
	for _, j := range jobs[:3] {
		require.NoError(t, j.Ack(ctx))
	}
	_, err = jobs[3].Fail(ctx, assert.AnError)
	require.NoError(t, err)
	now = now.Add(time.Minute)
	require.NoError(t, tp.sample(ctx, in))

	c = tp.chart(now)
	assert.True(t, c.Sampled)
	assert.Equal(t, int64(3), c.Completed)
	assert.Equal(t, int64(1), c.Failed)
	last := c.Bars[window-1]
	assert.Equal(t, chartHeight, last.CompletedH, "the busiest minute fills the chart")
	assert.Equal(t, chartHeight/3, last.FailedH)
	assert.Equal(t, "10:01: 3 completed, 1 failed", last.Title)
	assert.Zero(t, c.Bars[window-2].CompletedH, "the baseline minute counted nothing")

	sp := tp.sparkline("work", now)
	assert.Equal(t, "117,1 120,23", sp.Pending, "4 pending, then none")
	assert.Equal(t, "117,23 120,18", sp.Dead, "none dead, then 1 (of the same scale)")

	t.Run("a counter that went back restarted: all of it is new", func(t *testing.T) {
		assert.Equal(t, int64(5), grown(100, 5))
		assert.Equal(t, int64(7), grown(3, 10))
	})
	t.Run("a sample that failed says why on the page, until one reads again", func(t *testing.T) {
		// a read-only user of the docs' rules but INFO: what the log said
		// alone, the page said only "No sample yet"
		vk := s.ClientAs(t, "noinfo", "+@read", "+@connection", "+role", "+emq.caps", "+emq.repeats", "%R~emq:*")
		site := serveDashboard(t, vk, Config{})
		require.Error(t, site.d.rate.sample(ctx, site.d.cfg.Inspector))
		code, body := site.get(t, "/")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `<p class="flash err">The last sample failed: `)
		assert.Contains(t, body, "NOPERM")
		assert.Contains(t, body, "&#39;info&#39;", "the command refused, named")

		require.NoError(t, s.Do("ACL", "SETUSER", "noinfo", "+info").Error())
		require.NoError(t, site.d.rate.sample(ctx, site.d.cfg.Inspector))
		_, body = site.get(t, "/")
		assert.NotContains(t, body, "The last sample failed", "a sample that read every primary clears it")
	})
}

// TestLargeValues: a job page reads a payload, a result or an error up
// to inspect.ValueLimit bytes, and a queue page an error; a longer one is
// named by its size, never read. An error read is clipped.
func TestLargeValues(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	big := queuetest.Large(t, s.Client(), "big", inspect.ValueLimit+1)
	small := queuetest.Large(t, s.Client(), "small", inspect.ValueLimit)
	bigErr := queuetest.LargeError(t, s.Client(), "bigerr", inspect.ValueLimit+1)
	smallErr := queuetest.LargeError(t, s.Client(), "smallerr", inspect.ValueLimit)
	w := serveDashboard(t, s.Client(), Config{})
	t.Run("an error above the limit is named by its size", func(t *testing.T) {
		code, body := w.get(t, "/queues/bigerr/jobs/"+bigErr.String())
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `<div id="error"><p class="muted">(65537 bytes, not shown: above 64 KiB)</p></div>`)
		assert.NotContains(t, body, "EEE")
		code, body = w.get(t, "/queues/bigerr?state=dead")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `<td class="error">(65537 bytes, not shown: above 64 KiB)</td>`, "in the listing")
		assert.NotContains(t, body, "EEE")
	})
	t.Run("an error at the limit is clipped, as a payload is", func(t *testing.T) {
		code, body := w.get(t, "/queues/smallerr/jobs/"+smallErr.String())
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `<div id="error"><pre class="payload">`+strings.Repeat("E", previewBytes)+`</pre><p class="muted">the first 4096 characters</p></div>`)
		code, body = w.get(t, "/queues/smallerr?state=dead")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `<td class="error">`+strings.Repeat("E", 79)+"…</td>", "in the listing")
	})
	t.Run("an error keeps its lines on the job page, and is one line in a listing", func(t *testing.T) {
		m, err := ids.NewMinter(2)
		require.NoError(t, err)
		q, err := client.New(s.Client()).Queue("lines", m, client.Policy{MaxAttempts: 1})
		require.NoError(t, err)
		id, err := q.Enqueue(context.Background(), []byte("x"))
		require.NoError(t, err)
		jobs, err := q.Claim(context.Background(), 1)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		_, err = jobs[0].FailAfter(context.Background(), errors.New("boom\n\tat handler.go:12"), 0)
		require.NoError(t, err)
		_, body := w.get(t, "/queues/lines/jobs/"+id.String())
		assert.Contains(t, body, "<pre class=\"payload\">boom\n\tat handler.go:12</pre>", "a stack's lines kept")
		_, body = w.get(t, "/queues/lines?state=dead")
		assert.Contains(t, body, `<td class="error">boom at handler.go:12</td>`)
	})
	t.Run("values above the limit are named by their size", func(t *testing.T) {
		code, body := w.get(t, "/queues/big/jobs/"+big.String())
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, 2, strings.Count(body, `<p class="muted">(65537 bytes, not shown: above 64 KiB)</p>`), "the payload and the result")
		assert.NotContains(t, body, "PPP")
		assert.NotContains(t, body, "RRR")
	})
	t.Run("values at the limit are previewed", func(t *testing.T) {
		code, body := w.get(t, "/queues/small/jobs/"+small.String())
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "PPP")
		assert.Contains(t, body, "RRR")
		assert.NotContains(t, body, "not shown")
	})
}

// TestNamesFromTheData: a queue's or a schedule's name is whatever a
// producer chose. One that is not printable text is shown quoted — in the
// heading, the title, a flash — so that a right-to-left override turns no
// word of the page around; one of dots, which a browser takes out of a
// URL, is listed unlinked, with no action and no redirect to a page it
// cannot have.
func TestNamesFromTheData(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	cl := client.New(s.Client())
	m, err := ids.NewMinter(1)
	require.NoError(t, err)
	enqueue := func(queue string) string {
		t.Helper()
		q, err := cl.Queue(queue, m, client.Policy{})
		require.NoError(t, err)
		id, err := q.Enqueue(context.Background(), []byte("x"))
		require.NoError(t, err)
		return id.String()
	}
	const rlo = "\u202egnp.exe"
	enqueue(rlo)
	dots := enqueue("..")
	w := serveDashboard(t, s.Client(), Config{Write: true})

	t.Run("a name that is not printable text is quoted", func(t *testing.T) {
		code, body := w.get(t, queuePath(rlo))
		require.Equal(t, http.StatusOK, code)
		assert.NotContains(t, body, "\u202e", "the override nowhere in the page")
		assert.Contains(t, body, `<title>Queue &#34;\u202egnp.exe&#34; · emq</title>`)
		assert.Contains(t, body, `<h1>&#34;\u202egnp.exe&#34; `)
		_, loc := w.post(t, queuePath(rlo)+"/pause", url.Values{"csrf": {w.token(t, "/")}})
		_, body = w.get(t, loc)
		assert.Equal(t, `ok: Paused &#34;\u202egnp.exe&#34;: its claims take nothing until it is resumed; jobs already claimed run on.`, flashOf(body))
	})
	t.Run("a name of dots is listed unlinked, without actions", func(t *testing.T) {
		code, body := w.get(t, "/")
		require.Equal(t, http.StatusOK, code)
		row := body[strings.Index(body, `<tr data-queue="..">`):]
		row = row[:strings.Index(row, "</tr>")]
		assert.Contains(t, row, `<span class="queue" title="`+unlinkableNote+`">..</span>`)
		assert.NotContains(t, row, "href", "no link, to the queue or a tab")
		assert.NotContains(t, row, "<form", "no action")
		code, body = w.get(t, "/search?id="+dots)
		require.Equal(t, http.StatusOK, code, "no redirect to a page a browser cannot ask for")
		assert.Contains(t, body, `<li><span title="`+unlinkableNote+`">..</span> (emq job)</li>`)
	})
}

// TestOverviewPages: the overview lists QueuesPerPage queues a page, in
// name order, with links to the others; a page past the last redirects
// to the last.
func TestOverviewPages(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	vk := s.Client()
	cmds := make(valkey.Commands, 0, QueuesPerPage+1)
	for i := range QueuesPerPage + 1 {
		q, id := fmt.Sprintf("q%04d", i), "JOB0018f2a4c1e00001"
		cmds = append(cmds, vk.B().Arbitrary("EMQ.ENQUEUE").Args("2", keys.Job(q, id), keys.Set(q, keys.PendingSet), id, "x").Build())
	}
	for _, r := range vk.DoMulti(context.Background(), cmds...) {
		require.NoError(t, r.Error())
	}
	w := serveDashboard(t, vk, Config{})
	code, body := w.get(t, "/")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, QueuesPerPage, strings.Count(body, "<tr data-queue="))
	assert.Contains(t, body, `<tr data-queue="q0000">`)
	assert.Contains(t, body, fmt.Sprintf(`<tr data-queue="q%04d">`, QueuesPerPage-1))
	assert.Contains(t, body, fmt.Sprintf("queues 1–%d of %d", QueuesPerPage, QueuesPerPage+1))
	assert.Contains(t, body, `<a id="next" href="?page=2">`)
	assert.NotContains(t, body, `id="prev"`)

	require.NoError(t, s.Do("CONFIG", "RESETSTAT").Error())
	code, body = w.get(t, "/?page=2")
	require.Equal(t, http.StatusOK, code)
	stat := s.Info("commandstats")["cmdstat_zcard"] // calls=…,usec=…
	var zcards int64
	_, err := fmt.Sscanf(stat, "calls=%d,", &zcards)
	require.NoError(t, err, "cmdstat_zcard %q", stat)
	assert.Positive(t, zcards, "the page's queue counted")
	assert.Less(t, zcards, int64(10), "the page's one queue counted, not the %d others", QueuesPerPage)
	assert.Equal(t, 1, strings.Count(body, "<tr data-queue="))
	assert.Contains(t, body, fmt.Sprintf(`<tr data-queue="q%04d">`, QueuesPerPage))
	assert.Contains(t, body, `<a id="prev" href="?page=1">`)
	assert.NotContains(t, body, `id="next"`)

	resp, err := w.hc.Get(w.url + "/?page=3")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/?page=2", resp.Header.Get("Location"))
}

// TestSchedulesPages: a queue page lists SchedulesPerPage of the queue's
// schedules, next tick first, each page one EMQ.REPEATS of its own; a page
// past the last shows the last.
func TestSchedulesPages(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	vk := s.Client()
	cmds := make(valkey.Commands, 0, SchedulesPerPage+1)
	for i := range SchedulesPerPage + 1 {
		cmds = append(cmds, vk.B().Arbitrary("EMQ.REPEAT").Args("3", keys.Repeat("sched", fmt.Sprintf("s%03d", i)),
			keys.Set("sched", keys.Repeats), keys.Set("sched", keys.Config), fmt.Sprintf("@every %dm", i+1), "", "p", "0", "0", "0", "0").Build())
	}
	for _, r := range vk.DoMulti(context.Background(), cmds...) {
		require.NoError(t, r.Error())
	}
	w := serveDashboard(t, vk, Config{})
	rows := func(body string) int {
		table := body[strings.Index(body, `<table id="schedules">`):]
		return strings.Count(table[:strings.Index(table, "</table>")], "<tr>") - 1 // the header's
	}
	// every command logged, with its arguments: the page's EMQ.REPEATS
	// asks for its page alone
	require.NoError(t, s.Do("CONFIG", "SET", "slowlog-log-slower-than", "0").Error())
	require.NoError(t, s.Do("SLOWLOG", "RESET").Error())
	code, body := w.get(t, "/queues/sched")
	require.Equal(t, http.StatusOK, code)
	logged, err := s.Do("SLOWLOG", "GET", "-1").ToAny()
	require.NoError(t, err)
	assert.Contains(t, fmt.Sprint(logged), fmt.Sprintf("[EMQ.REPEATS 1 emq:{sched}:repeats 0 %d]", SchedulesPerPage))
	assert.Equal(t, SchedulesPerPage, rows(body))
	assert.Contains(t, body, fmt.Sprintf("<h2>Schedules <small>%d</small></h2>", SchedulesPerPage+1))
	assert.Contains(t, body, fmt.Sprintf("schedules 1–%d of %d", SchedulesPerPage, SchedulesPerPage+1))
	assert.Contains(t, body, `<a id="schedules-next" href="?state=dead&amp;schedules=2">`)
	assert.Contains(t, body, "<td>s000</td>", "the next tick first")
	code, body = w.get(t, "/queues/sched?schedules=2")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 1, rows(body))
	assert.Contains(t, body, fmt.Sprintf("<td>s%03d</td>", SchedulesPerPage))
	assert.Contains(t, body, fmt.Sprintf("schedules %d–%d of %d", SchedulesPerPage+1, SchedulesPerPage+1, SchedulesPerPage+1))
	assert.Contains(t, body, `<a id="schedules-prev" href="?state=dead&amp;schedules=1">`)
	for path, to := range map[string]string{
		"/queues/sched?schedules=99":                     "/queues/sched?state=dead&schedules=2",
		"/queues/sched?state=pending&page=2&schedules=2": "/queues/sched?state=pending&schedules=2",
	} {
		resp, err := w.hc.Get(w.url + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusSeeOther, resp.StatusCode, path)
		assert.Equal(t, to, resp.Header.Get("Location"), "%s: the last page, the other page kept", path)
	}
	code, _ = w.get(t, "/queues/sched?schedules=0")
	assert.Equal(t, http.StatusBadRequest, code)

	// a name whose row is not a schedule is in no page, but its rank is
	require.NoError(t, s.Do("SET", keys.Repeat("sched", "s010"), "x").Error())
	_, body = w.get(t, "/queues/sched")
	assert.Equal(t, SchedulesPerPage-1, rows(body))
	assert.Contains(t, body, fmt.Sprintf("schedules 1–%d of %d", SchedulesPerPage, SchedulesPerPage+1), "ranks, not rows")
}
