package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/queuetest"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browser starts headless Chromium (Debian's package; make test installs
// it) for the test, with a fresh profile and nothing reaching the network.
// A machine without it fails the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium on PATH (make test installs it: scripts/install-chromium.sh): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-component-update", true), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(bctx); err != nil { // starts the browser, on a context without a deadline
		t.Fatalf("starting chromium: %v", err)
	}
	return bctx
}

// screenshots is build/screenshots at the repository's root, where the
// browser test leaves its pages for a person to look at.
func screenshots(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		require.NotEqual(t, dir, filepath.Dir(dir), "no go.mod above the test")
		dir = filepath.Dir(dir)
	}
	dir = filepath.Join(dir, "build", "screenshots")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// shoot saves the page as dir/name.png.
func shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// step bounds one browser step, so a page that never comes fails fast.
func step[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	require.NoError(t, err)
	return v
}

// text is the trimmed text of the first node sel matches, once visible.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	step(t, ctx, chromedp.WaitVisible(chromedp.CSS(sel)))
	return strings.TrimSpace(step(t, ctx, chromedp.Text(chromedp.CSS(sel))))
}

// work does some jobs between two throughput samples of w, so the chart
// has a bar: 4 completed and 1 failed, in the queue thumbnails.
func work(t *testing.T, w *site, s *valkeytest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.d.rate.sample(ctx, w.d.cfg.Inspector))
	m, err := ids.NewMinter(2)
	require.NoError(t, err)
	q, err := client.New(s.Client()).Queue("thumbnails", m, client.Policy{MaxAttempts: 1})
	require.NoError(t, err)
	_, err = q.EnqueueMany(ctx, [][]byte{[]byte("a.jpg"), []byte("b.jpg"), []byte("c.jpg"), []byte("d.jpg"), []byte("e.tiff")})
	require.NoError(t, err)
	jobs, err := q.Claim(ctx, 5)
	require.NoError(t, err)
	require.Len(t, jobs, 5)
	for _, j := range jobs[:4] {
		require.NoError(t, j.Ack(ctx))
	}
	_, err = jobs[4].Fail(ctx, errors.New("tiff: unsupported"))
	require.NoError(t, err)
	_, err = w.d.cfg.Inspector.Refresh(ctx)
	require.NoError(t, err)
	require.NoError(t, w.d.rate.sample(ctx, w.d.cfg.Inspector))
}

// TestBrowser: a person opens the overview, follows a queue to its dead
// jobs, opens one, revives it and sees the counts change; pauses the queue
// and resumes it; deletes a pending job; removes a schedule; a read-only
// dashboard shows no action and refuses the POST; the dead tab's Revive
// all revives them behind a second click. The pages are left as
// PNGs under build/screenshots.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	rw := serveDashboard(t, s.Client(), Config{Write: true})
	ro := serveDashboard(t, s.Client(), Config{})
	dir := screenshots(t)
	dead := f.EmailsDead[0].String()
	work(t, rw, s)

	step(t, ctx, chromedp.Navigate(rw.url+"/"))
	assert.Equal(t, "2", text(t, ctx, `tr[data-queue="emails"] td.dead`))
	assert.Equal(t, "3", text(t, ctx, `tr[data-queue="emails"] td.pending`))
	assert.Contains(t, text(t, ctx, ".chart"), "4 completed · 1 failed")
	shoot(t, ctx, dir, "1-overview")

	step(t, ctx, chromedp.Click(chromedp.CSS(`tr[data-queue="emails"] a.queue`)))
	assert.Contains(t, text(t, ctx, "#jobs"), f.DeadError, "a queue opens on its dead jobs")
	assert.Contains(t, text(t, ctx, "nav.tabs a.current"), "dead 2")
	shoot(t, ctx, dir, "2-queue-dead")

	step(t, ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`a.job[href$="%s"]`, dead))))
	assert.Equal(t, "dead", text(t, ctx, "#state"))
	assert.Equal(t, f.DeadError, text(t, ctx, "#error"))
	shoot(t, ctx, dir, "3-job-dead")

	step(t, ctx, chromedp.Click(chromedp.CSS("#revive")))
	assert.Contains(t, text(t, ctx, "#flash"), "Revived "+dead)
	assert.Equal(t, "pending", text(t, ctx, "#state"))
	shoot(t, ctx, dir, "4-job-revived")

	step(t, ctx, chromedp.Click(chromedp.CSS(".brand")))
	assert.Equal(t, "1", text(t, ctx, `tr[data-queue="emails"] td.dead`), "the counts changed")
	assert.Equal(t, "4", text(t, ctx, `tr[data-queue="emails"] td.pending`))
	shoot(t, ctx, dir, "5-overview-after")

	step(t, ctx, chromedp.Click(chromedp.CSS(`tr[data-queue="emails"] a.queue`)))
	step(t, ctx, chromedp.WaitVisible(chromedp.CSS("nav.tabs"))) // the queue page, not the overview's buttons
	step(t, ctx, chromedp.Click(chromedp.CSS("form.toggle button.pause")))
	assert.Equal(t, "paused", text(t, ctx, "#paused"))
	assert.Contains(t, text(t, ctx, "#flash"), "Paused emails")
	shoot(t, ctx, dir, "6-queue-paused")
	step(t, ctx, chromedp.Click(chromedp.CSS("form.toggle button.resume")))
	step(t, ctx, chromedp.WaitVisible(chromedp.CSS("form.toggle button.pause"))) // the page after the resume
	assert.Contains(t, text(t, ctx, "#flash"), "Resumed emails")
	assert.Zero(t, step(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#paused").length`)), "the badge went")

	pending := f.EmailsPending[0].String()
	step(t, ctx, chromedp.Click(chromedp.CSS("#tab-pending")))
	step(t, ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`a.job[href$="%s"]`, pending))))
	step(t, ctx, chromedp.Click(chromedp.CSS("#delete-open")))
	step(t, ctx, chromedp.WaitVisible(chromedp.CSS("#delete")))
	shoot(t, ctx, dir, "7-job-delete")
	step(t, ctx, chromedp.Click(chromedp.CSS("#delete")))
	assert.Contains(t, text(t, ctx, "#flash"), "Deleted "+pending)
	assert.Contains(t, text(t, ctx, "nav.tabs a.current"), "pending 3", "back on the pending tab, one job fewer")
	shoot(t, ctx, dir, "8-job-deleted")

	t.Run("a schedule's Remove, confirmed, takes it off the queue's page", func(t *testing.T) {
		require.NoError(t, s.Do("EMQ.REPEAT", "3", keys.Repeat("emails", "nightly"), keys.Set("emails", keys.Repeats),
			keys.Set("emails", keys.Config), "30 2 * * *", "Europe/Berlin", "build the report", "0", "0", "0", "0").Error())
		step(t, ctx, chromedp.Navigate(rw.url+"/queues/emails"))
		assert.Contains(t, text(t, ctx, "#schedules"), "30 2 * * * Europe/Berlin")
		step(t, ctx, chromedp.Click(chromedp.CSS("#schedules details.danger summary")))
		step(t, ctx, chromedp.WaitVisible(chromedp.CSS("#schedules details.danger button")))
		shoot(t, ctx, dir, "11-schedule-remove")
		step(t, ctx, chromedp.Click(chromedp.CSS("#schedules details.danger button")))
		assert.Contains(t, text(t, ctx, "#flash"), "Removed the schedule nightly")
		assert.Zero(t, step(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#schedules").length`)), "no schedule left to list")
	})
	t.Run("a long queue name wraps: every count and action stays on screen", func(t *testing.T) {
		long := strings.Repeat("L", 600)
		m, err := ids.NewMinter(9)
		require.NoError(t, err)
		_, err = client.New(s.Client()).Enqueue(context.Background(), long, m.Mint(ids.Job), nil)
		require.NoError(t, err)
		_, err = rw.d.cfg.Inspector.Refresh(context.Background())
		require.NoError(t, err)
		for _, page := range []string{"/", "/queues/" + long} {
			step(t, ctx, chromedp.Navigate(rw.url+page))
			wide := step(t, ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
			assert.False(t, wide, "%s is wider than the window", page[:min(len(page), 12)])
		}
		shoot(t, ctx, dir, "10-long-name")
	})
	t.Run("another site cannot frame a page; the stylesheet applies under the page's policy", func(t *testing.T) {
		step(t, ctx, chromedp.Navigate(rw.url+"/"))
		assert.Equal(t, "flex", step(t, ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("header")).display`)),
			"style.css is loaded")
		// another origin (a port of its own) framing the overview, as a
		// clickjacking page would under a lure of its own
		lure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `<!doctype html><title>lure</title><iframe src="%s/"></iframe>`, rw.url)
		}))
		defer lure.Close()
		step(t, ctx, chromedp.Navigate(lure.URL))
		frame := func() *cdp.Frame {
			tree := step(t, ctx, func(ctx context.Context, tg *chromedp.Target) (*page.FrameTree, error) {
				res, err := cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
				return res.FrameTree, err
			})
			if len(tree.ChildFrames) == 0 {
				return nil
			}
			return tree.ChildFrames[0].Frame
		}
		var f *cdp.Frame
		require.Eventually(t, func() bool { f = frame(); return f != nil && f.UnreachableURL != "" }, 10*time.Second, 50*time.Millisecond,
			"the browser refuses to load the overview in another site's frame")
		assert.Equal(t, rw.url+"/", f.UnreachableURL)
		assert.NotEqual(t, rw.url+"/", f.URL)
	})
	t.Run("another site's page gets nothing read by asking on its own; its link to a page is followed", func(t *testing.T) {
		// a page of another origin (a port of its own: the same site, to a
		// browser) that asks for the search of an id no queue holds — a
		// scan of the server's keyspace each time — as an image, a fetch
		// and a frame
		const search = "/search?id=JOB00000000000000ff"
		lure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `<!doctype html><title>lure</title><img src="%[1]s%[2]s&n=1"><img src="%[1]s%[2]s&n=2">`+
				`<iframe src="%[1]s%[2]s&n=3"></iframe><a id="go" href="%[1]s/queues/emails">emails</a>`, rw.url, search)
		}))
		defer lure.Close()
		scans := s.Info("commandstats")["cmdstat_scan"]
		step(t, ctx, chromedp.Navigate(lure.URL))
		step(t, ctx, chromedp.Evaluate[[]any](fmt.Sprintf(`Promise.all([
			...[...document.images].map(i => i.complete || new Promise(r => { i.onload = i.onerror = r })),
			fetch(%q, {mode: "no-cors"}).catch(e => e.message),
			new Promise(r => { document.querySelector("iframe").onload = r; setTimeout(r, 3000) }),
		])`, rw.url+search+"&n=4"), chromedp.EvalAwaitPromise))
		assert.Equal(t, scans, s.Info("commandstats")["cmdstat_scan"], "no search ran")
		step(t, ctx, chromedp.Click(chromedp.CSS("#go")))
		assert.Contains(t, text(t, ctx, "h1"), "emails", "a link from another site is followed")
	})
	t.Run("a read-only dashboard shows no action and refuses the POST", func(t *testing.T) {
		other := f.EmailsDead[1].String()
		step(t, ctx, chromedp.Navigate(ro.url+"/queues/emails/jobs/"+other))
		assert.Equal(t, "dead", text(t, ctx, "#state"))
		assert.Equal(t, "read-only", text(t, ctx, "header .mode"))
		forms := step(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("form[method=post]").length`))
		assert.Zero(t, forms)
		shoot(t, ctx, dir, "9-read-only-job")
		status := step(t, ctx, chromedp.Evaluate[int](fmt.Sprintf(
			`fetch("/queues/emails/jobs/%s/revive", {method: "POST", body: new URLSearchParams({csrf: "x"})}).then(r => r.status)`, other),
			chromedp.EvalAwaitPromise))
		assert.Equal(t, 403, status)
		assert.Equal(t, int64(1), zcard(t, s, "emails", "dead"), "nothing written")
	})
	t.Run("the dead tab's Revive all, confirmed, revives every dead job", func(t *testing.T) {
		step(t, ctx, chromedp.Navigate(rw.url+"/queues/emails?state=dead"))
		assert.False(t, step(t, ctx, chromedp.Evaluate[bool](`document.querySelector("#revive-all").checkVisibility()`)),
			"one click does not revive them all")
		step(t, ctx, chromedp.Click(chromedp.CSS("#revive-all-open")))
		step(t, ctx, chromedp.WaitVisible(chromedp.CSS("#revive-all")))
		shoot(t, ctx, dir, "12-revive-all")
		step(t, ctx, chromedp.Click(chromedp.CSS("#revive-all")))
		assert.Contains(t, text(t, ctx, "#flash"), "Revived 1 of 1")
		assert.Zero(t, zcard(t, s, "emails", "dead"))
	})
}
