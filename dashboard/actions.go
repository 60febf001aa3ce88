package dashboard

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/internal/readable"
)

// jobPath is the path of a job's page.
func jobPath(queue, id string) string { return queuePath(queue) + "/jobs/" + url.PathEscape(id) }

// queuePath is the path of a queue's page.
func queuePath(queue string) string { return "/queues/" + url.PathEscape(queue) }

// job is the queue and the job id a job action's path names.
func (d *Dashboard) job(r *http.Request) (*client.Queue, ids.ID, error) {
	text := r.PathValue("id")
	id, ok := ids.Parse(ids.Job, []byte(text))
	if !ok {
		return nil, ids.ID{}, fmt.Errorf("%q is not a job id", text)
	}
	q, err := d.queue(r.PathValue("queue"))
	return q, id, err
}

// revive revives one dead job through EMQ.REVIVE.
func (d *Dashboard) revive(r *http.Request) (back, msg string, err error) {
	back = jobPath(r.PathValue("queue"), r.PathValue("id"))
	q, id, err := d.job(r)
	if err != nil {
		return back, "", err
	}
	if err := q.Revive(r.Context(), id); err != nil {
		return back, "", err
	}
	return back, "Revived " + id.String() + ": it is pending again.", nil
}

// reviveDead revives every job dead when it starts, a batch at a time,
// each through EMQ.REVIVE.
func (d *Dashboard) reviveDead(r *http.Request) (back, msg string, err error) {
	name := r.PathValue("queue")
	back = queuePath(name)
	q, err := d.queue(name)
	if err != nil {
		return back, "", err
	}
	p, err := d.cfg.Inspector.ForEach(r.Context(), inspect.Selection{Queue: name, State: inspect.Dead}, q.Revive, nil)
	if err != nil {
		return back, "", err
	}
	if p.Failed > 0 {
		return back, "", fmt.Errorf("revived %d of %d dead jobs; %d failed, the first: %w", p.Done, p.Total, p.Failed, p.Err)
	}
	return back, fmt.Sprintf("Revived %d of %d dead jobs.", p.Done, p.Total), nil
}

// pause stops the queue's claims through EMQ.PAUSE.
func (d *Dashboard) pause(r *http.Request) (back, msg string, err error) {
	return d.setPaused(r, true)
}

// resume lets the queue's claims take jobs again through EMQ.RESUME.
func (d *Dashboard) resume(r *http.Request) (back, msg string, err error) {
	return d.setPaused(r, false)
}

// setPaused pauses or resumes the queue, back to the page the form was
// on: the overview when its from field says so, else the queue's page.
func (d *Dashboard) setPaused(r *http.Request, pause bool) (back, msg string, err error) {
	name := r.PathValue("queue")
	back = queuePath(name)
	if r.PostFormValue("from") == "overview" {
		back = "/"
	}
	q, err := d.queue(name)
	if err != nil {
		return back, "", err
	}
	set, did, already := q.Resume, "Resumed %s: its claims take jobs again.", "%s was not paused."
	if pause {
		set, did, already = q.Pause, "Paused %s: its claims take nothing until it is resumed; jobs already claimed run on.", "%s was paused already."
	}
	changed, err := set(r.Context())
	if err != nil {
		return back, "", err
	}
	if !changed {
		return back, fmt.Sprintf(already, readable.Printable(name)), nil
	}
	return back, fmt.Sprintf(did, readable.Printable(name)), nil
}

// remove deletes one job, whatever its state, through EMQ.REMOVE, back to
// the queue's tab of the state it was in (its form's state field).
func (d *Dashboard) remove(r *http.Request) (back, msg string, err error) {
	back = queuePath(r.PathValue("queue"))
	if st, ok := inspect.ParseState(r.PostFormValue("state")); ok {
		back += "?state=" + string(st)
	}
	q, id, err := d.job(r)
	if err != nil {
		return back, "", err
	}
	found, err := q.Remove(r.Context(), id)
	if err != nil {
		return back, "", err
	}
	if !found {
		return back, "", fmt.Errorf("queue %s holds no job %s: deleted already?", readable.Printable(q.Name()), id)
	}
	return back, "Deleted " + id.String() + ".", nil
}

// unrepeat removes one of the queue's repeat schedules through
// EMQ.UNREPEAT, back to the queue's page; the jobs it made stay.
func (d *Dashboard) unrepeat(r *http.Request) (back, msg string, err error) {
	queue, name := r.PathValue("queue"), r.PathValue("name")
	back = queuePath(queue)
	q, err := d.queue(queue)
	if err != nil {
		return back, "", err
	}
	found, err := q.Unrepeat(r.Context(), name)
	if err != nil {
		return back, "", err
	}
	if !found {
		return back, "", fmt.Errorf("queue %s has no schedule %s: removed already?", readable.Printable(queue), readable.Printable(name))
	}
	return back, fmt.Sprintf("Removed the schedule %s: it makes no more jobs; those it made stay.", readable.Printable(name)), nil
}
