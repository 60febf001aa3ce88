package inspect

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUnreachableErrorSaysWhy: the text says "did not answer" of
// primaries that did not, "is not read yet" of those the client has not
// learned of, and both when the two are named together.
func TestUnreachableErrorSaysWhy(t *testing.T) {
	timeout := errors.New("i/o timeout")
	for _, tc := range []struct {
		name string
		e    UnreachableError
		want string
	}{
		{"silent", UnreachableError{Addrs: []string{"a:1"}, Err: timeout},
			"inspect: primary a:1 did not answer (i/o timeout): the queues it serves are left out"},
		{"unlearned", UnreachableError{Addrs: []string{"a:1"}, Err: errUnlearned, unlearned: 1},
			"inspect: primary a:1 is not read yet (" + errUnlearned.Error() + "): the queues it serves are left out"},
		{"both", UnreachableError{Addrs: []string{"a:1", "b:2"}, Err: errUnlearned, unlearned: 1},
			"inspect: primary a:1, b:2 did not answer or is not read yet (" + errUnlearned.Error() + "): the queues it serves are left out"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.e.Error()) })
	}
}
