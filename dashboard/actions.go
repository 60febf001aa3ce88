package dashboard

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
)

// jobPath is the path of a job's page.
func jobPath(queue, id string) string { return queuePath(queue) + "/jobs/" + url.PathEscape(id) }

// queuePath is the path of a queue's page.
func queuePath(queue string) string { return "/queues/" + url.PathEscape(queue) }

// revive revives one dead job through EMQ.REVIVE.
func (d *Dashboard) revive(r *http.Request) (back, msg string, err error) {
	name, text := r.PathValue("queue"), r.PathValue("id")
	back = jobPath(name, text)
	id, ok := ids.Parse(ids.Job, []byte(text))
	if !ok {
		return back, "", fmt.Errorf("%q is not a job id", text)
	}
	q, err := d.queue(name)
	if err != nil {
		return back, "", err
	}
	if err := q.Revive(r.Context(), id); err != nil {
		return back, "", err
	}
	return back, "Revived " + text + ": it is pending again.", nil
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
