package valkeytest_test

import (
	"testing"

	"github.com/echomq/emq/internal/valkeytest"
)

func TestReplicaFollows(t *testing.T) {
	p := valkeytest.Start(t, valkeytest.Options{})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true})
	p.Do("EMQ.ENQUEUE", "2", "emq:{q}:job:JOB0018f2a4c1e00001", "emq:{q}:pending", "JOB0018f2a4c1e00001", "hello")
	p.Do("EMQ.FAILURES.INCR", "1", "emq:{t}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00001", "1500")
	p.Do("EMQ.APPEND", "1", "emq:{t}:stream:s", "2", "EVT0018f2a4c1e00001", "1", "a", "b", "EVT0018f2a4c1e00002", "1", "c", "d")
	valkeytest.WaitReplicated(t, p, r)
	d1, _ := p.Do("DEBUG", "DIGEST").ToString()
	d2, _ := r.Do("DEBUG", "DIGEST").ToString()
	if d1 != d2 {
		t.Fatalf("digest %s != %s\n%s", d1, d2, r.LogTail(10))
	}
	t.Log(d1, r.Do("PTTL", "emq:{t}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00001"))
}

// TestAServerOnTheSamePortIsNotAdopted: a server asked for a port another
// server holds fails to start, and is reported so, rather than handing
// back the other one — a restart on a fixed port must be a restart.
func TestAServerOnTheSamePortIsNotAdopted(t *testing.T) {
	first := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	_, err := valkeytest.Launch(valkeytest.Options{NoModule: true, Port: first.Port})
	if err == nil {
		t.Fatalf("a second server on port %d was handed back as started", first.Port)
	}
	t.Log(err)
}
