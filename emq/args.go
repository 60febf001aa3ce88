package emq

import "math"

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

// numkeys checks that the call declares exactly the keys its verb takes,
// one or two.
func numkeys(args [][]byte, want int) error {
	if v, ok := ParseInt(args[1]); !ok || v != int64(want) {
		if want == 1 {
			return errNumkeys1
		}
		return errNumkeys2
	}
	return nil
}
