package dashboard

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/echomq/emq/client"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/internal/readable"
)

// PageSize is how many jobs a queue page lists.
const PageSize = 50

// QueuesPerPage is how many queues the overview lists a page.
const QueuesPerPage = 500

// SchedulesPerPage is how many repeat schedules a queue page lists.
const SchedulesPerPage = 50

// maxPage is the highest page number whose ranks int arithmetic holds
// (page × PageSize, page × QueuesPerPage): a higher one is refused, not
// wrapped.
const maxPage = math.MaxInt / max(PageSize, QueuesPerPage)

// pageOf is the request's page number of parameter param ("page"), from
// 1 (no such parameter: 1); false, having answered 400, for one that is
// no number or out of range.
func pageOf(w http.ResponseWriter, r *http.Request, param string) (int, bool) {
	p := r.URL.Query().Get(param)
	if p == "" {
		return 1, true
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > maxPage {
		http.Error(w, fmt.Sprintf("no page %q: pages are numbered 1 to %d", p, maxPage), http.StatusBadRequest)
		return 0, false
	}
	return n, true
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"path":     url.PathEscape,
	"duration": readable.Duration,
	"relative": readable.Relative,
	"time":     readable.Time,
	"size":     readable.Size,
	// a name from the data — a queue's, a schedule's — quoted unless it is
	// printable text, so that none turns the page's own words around (a
	// right-to-left override) or hides a character
	"name":       readable.Printable,
	"linkable":   linkable,
	"unlinkable": func() string { return unlinkableNote },
	"count":      func(c map[inspect.State]int64, st inspect.State) int64 { return c[st] },
	"jobs":       jobs,
	"toggle":     func(queue string, paused bool, csrf, from string) toggle { return toggle{queue, paused, csrf, from} },
}

// linkable reports whether name, a queue's or a schedule's, can be a
// segment of a page's path: not "." or "..", which a browser takes out of
// a URL (as it does their escapes, %2E). Such a queue is listed, unlinked,
// with unlinkableNote; emq reads and acts on it.
func linkable(name string) bool { return name != "." && name != ".." }

// unlinkableNote says why a name is not a link.
const unlinkableNote = "a name of dots cannot be part of a URL: read and act on it with emq"

// jobs is n jobs in words: "1 job", "7 jobs".
func jobs(n int64) string {
	if n == 1 {
		return "1 job"
	}
	return strconv.FormatInt(n, 10) + " jobs"
}

// toggle is what the pause template needs: the queue, whether it is
// paused, the CSRF token and the page the form is on ("overview", or ""
// for the queue's page).
type toggle struct {
	Queue      string
	Paused     bool
	CSRF, From string
}

// view is what every page shows: the layout's parts and the page's own.
type view struct {
	Title    string
	Write    bool
	CSRF     string
	Msg, Err string
	Nodes    []string
	// Down names the primaries of a cluster that did not answer: the
	// page lacks their queues.
	Down string
	Now  time.Time
	Body any
}

// render writes page name with body and status, or a 500 naming the
// failure.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name, title string, body any) {
	v := view{Title: title, Write: d.cfg.Write, CSRF: d.csrfToken(w, r), Now: d.cfg.Inspector.Now(), Body: body}
	v.Msg, v.Err = d.flash(r)
	nodes, err := d.cfg.Inspector.Primaries(r.Context())
	for _, n := range nodes {
		v.Nodes = append(v.Nodes, n.Addr)
	}
	var down *inspect.UnreachableError
	if errors.As(err, &down) {
		v.Down = down.Error()
	}
	var buf bytes.Buffer
	if err := d.pages[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		d.cfg.Logger.Warn("dashboard: page", "path", r.URL.Path, "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// a page holds what the applications wrote — payloads, errors — and a
	// CSRF token: no browser keeps it on disk, no proxy between keeps it
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// fail answers a page whose reads failed with the error page: 502 when
// the server replied an error (a key of the wrong type, say), 503 when it
// did not answer (gone, or not within Config.Timeout).
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	d.cfg.Logger.Warn("dashboard: page", "path", r.URL.Path, "err", err)
	status, title := http.StatusServiceUnavailable, "The server did not answer"
	if inspect.Refused(err) {
		status, title = http.StatusBadGateway, "The server refused a read"
	}
	d.render(w, r, status, "error", title, err.Error())
}

// queueRow is a queue's line of the overview.
type queueRow struct {
	inspect.Summary
	Depth sparkline
}

// span is one page of a listing: the ranks, from 1, of its first and last
// items, of Total, and the pages before and after it (0: none).
type span struct{ First, Last, Total, Prev, Next int }

// spanOf is page page (from 1) of total items, size a page; last is the
// number of the last page (1 when there is no item).
func spanOf(page, size int, total int64) (s span, last int) {
	last = int(max(1, (total+int64(size)-1)/int64(size)))
	s = span{First: (page-1)*size + 1, Last: int(min(int64(page*size), total)), Total: int(total)}
	if page > 1 {
		s.Prev = page - 1
	}
	if page < last {
		s.Next = page + 1
	}
	return s, last
}

// overviewBody is the overview's content: a page of the queues.
type overviewBody struct {
	Queues []queueRow
	States []inspect.State
	Chart  chart
	Pages  span // of the queues found
}

// overview lists a page of the queues found (in name order), each read
// for the page alone: a server of thousands of queues is not read whole
// to show a page of them.
func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	page, ok := pageOf(w, r, "page")
	if !ok {
		return
	}
	names, lost := d.cfg.Inspector.Queues(r.Context())
	if lost != nil && !inspect.Partial(lost) { // render's Down says which primary
		d.fail(w, r, lost)
		return
	}
	pages, last := spanOf(page, QueuesPerPage, int64(len(names)))
	if page > last {
		to := "/"
		if last > 1 {
			to += "?page=" + strconv.Itoa(last)
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	sums, err := d.cfg.Inspector.Summaries(r.Context(), names[pages.First-1:pages.Last])
	if err != nil {
		d.fail(w, r, err)
		return
	}
	now := d.cfg.Inspector.Now()
	body := overviewBody{States: inspect.States, Chart: d.rate.chart(now), Pages: pages}
	for _, s := range sums {
		body.Queues = append(body.Queues, queueRow{Summary: s, Depth: d.rate.sparkline(s.Queue, now)})
	}
	d.render(w, r, http.StatusOK, "overview", "Queues", body)
}

// pagePath is the path of queue's page of state st: its jobs' page page
// and its schedules' page spage, each left out when 1.
func pagePath(queue string, st inspect.State, page, spage int) string {
	to := queuePath(queue) + "?state=" + string(st)
	if page > 1 {
		to += "&page=" + strconv.Itoa(page)
	}
	if spage > 1 {
		to += "&schedules=" + strconv.Itoa(spage)
	}
	return to
}

// queueBody is a queue page's content: its summary and a page of one state.
type queueBody struct {
	inspect.Summary
	States   []inspect.State
	State    inspect.State
	Jobs     []inspect.JobRow
	Pages    span // of the jobs in State
	PageSize int
	// Schedules are a page of the queue's repeat schedules (EMQ.REPEATS),
	// SchedulePages its span of the ranks in Repeats.
	Schedules     []client.Schedule
	SchedulePages span
}

func (d *Dashboard) queuePage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	st := inspect.Dead
	if s := r.URL.Query().Get("state"); s != "" {
		var ok bool
		if st, ok = inspect.ParseState(s); !ok {
			http.Error(w, fmt.Sprintf("no state %q: pending, active, delayed or dead", s), http.StatusBadRequest)
			return
		}
	}
	page, ok := pageOf(w, r, "page")
	if !ok {
		return
	}
	spage, ok := pageOf(w, r, "schedules")
	if !ok {
		return
	}
	sum, err := d.cfg.Inspector.Summary(r.Context(), name)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	// past the last page, of jobs or of schedules: the last, rather than an
	// empty page whose "previous" link is empty too (page 1 of an empty
	// state)
	_, last := spanOf(page, PageSize, sum.Counts[st])
	schedulePages, slast := spanOf(spage, SchedulesPerPage, sum.Repeats)
	if page > last || spage > slast {
		http.Redirect(w, r, pagePath(name, st, min(page, last), min(spage, slast)), http.StatusSeeOther)
		return
	}
	jobs, total, err := d.cfg.Inspector.Jobs(r.Context(), name, st, (page-1)*PageSize, PageSize)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	q, err := d.queue(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	schedules, err := q.SchedulesPage(r.Context(), schedulePages.First-1, SchedulesPerPage)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	pages, _ := spanOf(page, PageSize, total)
	body := queueBody{Summary: sum, States: inspect.States, State: st, Jobs: jobs, Pages: pages, PageSize: PageSize,
		Schedules: schedules, SchedulePages: schedulePages}
	d.render(w, r, http.StatusOK, "queue", "Queue "+readable.Printable(name), body)
}

// jobBody is a job page's content: what Queue.JobUpTo read.
type jobBody struct {
	*client.JobInfo
	Queue                              string
	Minted                             time.Time
	PayloadView, ResultView, ErrorView preview
	HasResult                          bool
	Counted                            int64 // attempts its budget counts: Attempts − Revived
}

// Tab is the queue page's tab listing the job: its state, or dead for a
// job in none (a done one).
func (j jobBody) Tab() client.State {
	if _, ok := inspect.ParseState(string(j.State)); ok {
		return j.State
	}
	return client.StateDead
}

// preview is a payload or a result as the job page shows it: its text,
// clipped, unless it is binary or was left unread (Unread says so).
type preview struct {
	Size            int64
	Text, Unread    string
	Clipped, Binary bool
}

// previewBytes is how much of a payload, result or error a job page
// shows.
const previewBytes = 4096

// previewOf previews value b of size bytes, or says it is unread.
func previewOf(b []byte, size int64, unread bool) preview {
	if unread {
		return preview{Size: size, Unread: inspect.Unread(size)}
	}
	text, clipped, ok := readable.Preview(b, previewBytes)
	return preview{Size: size, Text: text, Clipped: clipped, Binary: !ok}
}

func (d *Dashboard) jobPage(w http.ResponseWriter, r *http.Request) {
	name, text := r.PathValue("queue"), r.PathValue("id")
	id, ok := ids.Parse(ids.Job, []byte(text))
	if !ok {
		d.render(w, r, http.StatusNotFound, "search", "No such job", searchBody{ID: text, Note: notJobID(text)})
		return
	}
	q, err := d.queue(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	j, err := q.JobUpTo(r.Context(), id, inspect.ValueLimit)
	if errors.Is(err, emqerrors.NoJob) {
		d.render(w, r, http.StatusNotFound, "search", "No such job", searchBody{ID: text,
			Note: fmt.Sprintf("Queue %s holds no job %s (an acknowledged job's row is gone unless kept).", readable.Printable(name), text)})
		return
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	body := jobBody{JobInfo: j, Queue: name, Minted: time.UnixMilli(int64(id.UnixMs())),
		PayloadView: previewOf(j.Payload, j.PayloadSize, j.PayloadUnread), ResultView: previewOf(j.Result, j.ResultSize, j.ResultUnread),
		ErrorView: previewOf([]byte(j.Error), j.ErrorSize, j.ErrorUnread), HasResult: j.Result != nil || j.ResultUnread,
		Counted: j.Attempts - j.Revived}
	d.render(w, r, http.StatusOK, "job", "Job "+text, body)
}

// searchBody is the search page's content.
type searchBody struct {
	ID     string
	Note   string
	Queues []string
}

// notJobID says why text is not a job id.
func notJobID(text string) string {
	return fmt.Sprintf("%q is not a job id: JOB and 16 lowercase hex digits.", text)
}

// search finds the queues holding a job id: straight to the job's page
// when one does.
func (d *Dashboard) search(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	body := searchBody{ID: id}
	if !ids.Valid(ids.Job, []byte(id)) {
		body.Note = notJobID(id)
		d.render(w, r, http.StatusOK, "search", "Search", body)
		return
	}
	found, unreadable, err := d.cfg.Inspector.Find(r.Context(), id)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if len(found) == 1 && linkable(found[0]) {
		http.Redirect(w, r, jobPath(found[0], id), http.StatusSeeOther)
		return
	}
	body.Queues = found
	switch {
	case len(found) == 0 && len(unreadable) > 0:
		body.Note = "No queue the dashboard may read holds job " + id + "; the server refused reading " +
			readable.Names(unreadable) + " (NOPERM), which may."
	case len(found) == 0:
		body.Note = "No queue holds job " + id + " (an acknowledged job's row is gone unless kept)."
	}
	d.render(w, r, http.StatusOK, "search", "Search", body)
}
