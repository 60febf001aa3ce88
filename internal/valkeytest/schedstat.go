package valkeytest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Schedstat is the kernel's accounting of one thread, in nanoseconds, as
// /proc/<pid>/task/<tid>/schedstat keeps it: the CPU time it ran (exact,
// unlike the tick-sampled rusage), and the time it spent runnable but
// waiting for a core that another thread held.
type Schedstat struct{ Run, Wait int64 }

// ReadSchedstat reads a thread's schedstat file: run time, wait time, and
// the count of time slices, which is not kept.
func ReadSchedstat(path string) (Schedstat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Schedstat{}, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return Schedstat{}, fmt.Errorf("%s: %q has no run and wait times", path, b)
	}
	var st Schedstat
	for i, dst := range []*int64{&st.Run, &st.Wait} {
		if *dst, err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return Schedstat{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	return st, nil
}

// Minus is the accounting between an earlier reading and s.
func (s Schedstat) Minus(earlier Schedstat) Schedstat {
	return Schedstat{Run: s.Run - earlier.Run, Wait: s.Wait - earlier.Wait}
}
