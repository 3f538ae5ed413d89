package devbroker

import (
	"strconv"
	"strings"
)

// handle is a parsed receipt handle. On the wire it is "PARTITION:OFFSET:NONCE", the
// shape production uses, but the nonce is a fresh random 64-bit number for every
// delivery rather than a counter: a handle can then be neither guessed nor replayed
// after a restart, which a client must not rely on anyway (handles are opaque).
type handle struct {
	part   int
	offset int64
	nonce  uint64
}

func appendHandle(dst []byte, part int, offset int64, nonce uint64) []byte {
	dst = strconv.AppendInt(dst, int64(part), 10)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, offset, 10)
	dst = append(dst, ':')
	return strconv.AppendUint(dst, nonce, 10)
}

// parseHandle accepts exactly what appendHandle writes (decimal, no signs, no spaces).
func parseHandle(s string) (handle, bool) {
	p, rest, ok1 := strings.Cut(s, ":")
	o, n, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || !allDigits(p) || !allDigits(o) || !allDigits(n) {
		return handle{}, false
	}
	part, err1 := strconv.ParseInt(p, 10, 32)
	off, err2 := strconv.ParseInt(o, 10, 64)
	nonce, err3 := strconv.ParseUint(n, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return handle{}, false
	}
	return handle{part: int(part), offset: off, nonce: nonce}, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
