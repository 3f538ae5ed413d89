package bench

import (
	"io"
	"math/rand/v2"
	"strconv"

	"github.com/narad/narad/internal/producer"
)

// Payload is what bench messages hold.
type Payload int

const (
	// Text is random letters and digits: printable, and nothing a JSON encoder must
	// escape, so the encoding costs what a plain text message costs.
	Text Payload = iota
	// JSON is a JSON value of exactly the size asked for: {"r":"…"} from 8 bytes,
	// a JSON string below that, a digit for 1 byte. The node hands JSON back verbatim.
	JSON
)

func (p Payload) String() string {
	if p == JSON {
		return "json"
	}
	return "text"
}

// poolBytes bounds the memory the distinct payloads take; there are at most
// maxDistinct of them, so the node does not see one body over and over.
const (
	poolBytes   = 8 << 20
	maxDistinct = 64
)

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// payloads makes the distinct bodies of a run, each exactly size bytes.
func payloads(kind Payload, size int, rng *rand.Rand) [][]byte {
	n := min(maxDistinct, max(1, poolBytes/size))
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, size)
		for j := range b {
			b[j] = alnum[rng.IntN(len(alnum))]
		}
		if kind == JSON {
			switch {
			case size >= 8:
				copy(b, `{"r":"`)
				copy(b[size-2:], `"}`)
			case size >= 2:
				b[0], b[size-1] = '"', '"'
			default:
				b[0] = byte('0' + rng.IntN(10))
			}
		}
		out[i] = b
	}
	return out
}

// source is the produce phase's input: count records cycling through the distinct
// payloads, with keys k0…k(keys-1) in turn when keys > 0.
type source struct {
	bodies [][]byte
	count  int
	keys   int
	i      int
}

func newSource(kind Payload, size, count, keys int, rng *rand.Rand) producer.Source {
	return &source{bodies: payloads(kind, size, rng), count: count, keys: keys}
}

func (s *source) Unit() string { return "message" }

func (s *source) Next() (*producer.Record, error) {
	if s.i >= s.count {
		return nil, io.EOF
	}
	body := s.bodies[s.i%len(s.bodies)]
	s.i++
	rec := &producer.Record{Pos: s.i, Body: body, Size: int64(len(body))}
	if s.keys > 0 {
		k := "k" + strconv.Itoa((s.i-1)%s.keys)
		rec.Key = &k
	}
	return rec, nil
}
