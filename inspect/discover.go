package inspect

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/echomq/emq/keys"
)

// queueKeys are the keys whose presence makes a queue: its four sets, its
// config hash (a paused or limited queue with no job) and its schedules.
var queueKeys = []string{keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet, keys.Config, keys.Repeats}

// scanPattern matches the keys of queueKeys, and of a queue's other keys
// only its schedule rows (repeat:<name>, which repeats' r lets in): a job
// row's segment starts with j, a topic's stream and failure counts with s
// and f. A name holds no '}', so the * stops at the tag's end.
const scanPattern = "emq:{*}:[pacdr]*"

// scanTimeout bounds a discovery refreshed in the background.
const scanTimeout = time.Minute

// Queues returns the name of every queue found, sorted. The first call
// scans; later calls within Options.CacheFor answer from the last scan, and
// a call after that answers the last list at once while a background scan
// refreshes it (one scan at a time) — but a list twice CacheFor old is
// not served: that call scans, so no caller (a scrape every few minutes)
// is served a list older than that. [Inspector.Refresh] scans now.
//
// On a cluster with a primary that does not answer, every call scans the
// primaries that do and returns their queues with the *UnreachableError
// naming it, and caches nothing: a list that lost a node is never served
// as whole.
func (in *Inspector) Queues(ctx context.Context) ([]string, error) {
	if _, err := in.askPrimaries(ctx); err != nil {
		return in.Refresh(ctx)
	}
	in.mu.Lock()
	found, at := in.found, in.foundAt
	age := in.opts.Now().Sub(at)
	if age >= 2*in.opts.CacheFor {
		found = nil // too old to serve: scan now
	}
	stale := found != nil && age >= in.opts.CacheFor
	if stale && !in.scanning {
		in.scanning = true
		go func() {
			bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), scanTimeout)
			defer cancel()
			_, _ = in.Refresh(bg) // a failed refresh keeps the last list; the next call tries again
			in.mu.Lock()
			in.scanning = false
			in.mu.Unlock()
		}()
	}
	in.mu.Unlock()
	if found != nil {
		return found, nil
	}
	return in.Refresh(ctx)
}

// Refresh scans every primary for queues now, caches the list and returns
// it. Each SCAN call visits at most Options.ScanCount slots of the keyspace
// and replies only the keys of scanPattern — a queue's six and its
// schedule rows. With a primary that does not answer it returns the
// queues of those that do, uncached, and the *UnreachableError.
func (in *Inspector) Refresh(ctx context.Context) ([]string, error) {
	select { // a scan under way may be held up longer than ctx allows
	case in.scan <- struct{}{}:
		defer func() { <-in.scan }()
	case <-ctx.Done():
		return nil, fmt.Errorf("queue discovery: waiting for the scan under way: %w", ctx.Err())
	}
	primaries, lost := in.askPrimaries(ctx)
	if lost != nil && !Partial(lost) {
		return nil, lost
	}
	seen := map[string]bool{}
	err := in.scanKeys(ctx, primaries, scanPattern, func(key string) {
		if name, ok := queueOf(key); ok {
			seen[name] = true
		}
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	if lost != nil {
		return names, lost
	}
	in.mu.Lock()
	in.found, in.foundAt = names, in.opts.Now()
	in.mu.Unlock()
	return names, nil
}

// scanKeys visits the keys that match pattern on each of primaries, one SCAN
// of Options.ScanCount slots at a time.
func (in *Inspector) scanKeys(ctx context.Context, primaries []Node, pattern string, each func(key string)) error {
	for _, p := range primaries {
		var cursor uint64
		for {
			e, err := p.Client.Do(ctx, p.Client.B().Scan().Cursor(cursor).Match(pattern).
				Count(int64(in.opts.ScanCount)).Build()).AsScanEntry()
			if err != nil {
				return fmt.Errorf("SCAN of %s: %w", p.Addr, err)
			}
			for _, key := range e.Elements {
				each(key)
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return nil
}

// queueOf is the queue whose key of queueKeys key is; ok is false for a key
// of another layout.
func queueOf(key string) (name string, ok bool) {
	for _, k := range queueKeys {
		if q, ok := keys.SplitSet([]byte(key), k); ok {
			return string(q), true
		}
	}
	return "", false
}
