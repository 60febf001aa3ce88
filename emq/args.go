package emq

import (
	"math"
	"strconv"

	"github.com/echomq/emq/errors"
)

// ParseInt reads b as the server reads an integer (string2ll): an optional
// '-', then "0" or digits without a leading zero, fitting a signed 64-bit
// integer. Nothing else — no '+', no spaces, no "-0" — is an integer.
func ParseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	switch {
	case len(digits) == 0 || len(digits) > 19:
		return 0, false
	case digits[0] == '0':
		return 0, len(b) == 1
	}
	var v uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0') // 19 digits cannot wrap a uint64
	}
	switch {
	case neg && v <= math.MaxInt64+1:
		return int64(-v), true
	case !neg && v <= math.MaxInt64:
		return int64(v), true
	}
	return 0, false
}

// positive reads b as a positive integer.
func positive(b []byte) (int64, bool) {
	v, ok := ParseInt(b)
	return v, ok && v > 0
}

// numkeys checks that the call declares exactly the keys its verb takes.
func numkeys(args [][]byte, want int) error {
	if v, ok := ParseInt(args[1]); !ok || v != int64(want) {
		return errNumkeys[want]
	}
	return nil
}

// errNumkeys are the refusals of a wrong numkeys, by the count the verb takes.
var errNumkeys = [...]error{
	1: static(errors.Shape, "numkeys must be 1"),
	2: static(errors.Shape, "numkeys must be 2"),
	3: static(errors.Shape, "numkeys must be 3"),
	4: static(errors.Shape, "numkeys must be 4"),
	5: static(errors.Shape, "numkeys must be 5"),
}

// bound is an integer argument's range; its refusal is made once.
type bound struct {
	min, max int64
	err      error
}

// newBound is the range min … max of the argument name.
func newBound(name string, min, max int64) bound {
	return bound{min, max, static(errors.Shape, name+" must be an integer from "+
		strconv.FormatInt(min, 10)+" to "+strconv.FormatInt(max, 10))}
}

// parse reads b as an integer within the bound: decimal digits only, no
// sign, no leading zero.
func (r bound) parse(b []byte) (int64, error) {
	if len(b) > 0 && b[0] == '-' {
		return 0, r.err
	}
	v, ok := ParseInt(b)
	if !ok || v < r.min || v > r.max {
		return 0, r.err
	}
	return v, nil
}
