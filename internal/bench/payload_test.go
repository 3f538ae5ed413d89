package bench

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPayloadsHaveTheSizeAsked(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{1, 2, 3, 7, 8, 9, 100, 4096, 1 << 20} {
		for _, kind := range []Payload{Text, JSON} {
			bodies := payloads(kind, size, rng)
			if len(bodies) == 0 || len(bodies) > maxDistinct || len(bodies)*size > poolBytes+size {
				t.Fatalf("%v %d: %d distinct bodies", kind, size, len(bodies))
			}
			for _, b := range bodies {
				if len(b) != size {
					t.Fatalf("%v %d: a body of %d bytes", kind, size, len(b))
				}
				if kind == JSON && !json.Valid(b) {
					t.Fatalf("json %d: %q is not JSON", size, b)
				}
				for _, c := range b {
					if c < 0x20 || c > 0x7e || (kind == Text && (c == '"' || c == '\\')) {
						t.Fatalf("%v %d: byte %q is not printable or needs escaping", kind, size, c)
					}
				}
			}
		}
	}
}

func TestSourceCountsAndKeys(t *testing.T) {
	src := newSource(Text, 10, 5, 2, rand.New(rand.NewPCG(1, 1)))
	var keys []string
	for i := 1; ; i++ {
		rec, err := src.Next()
		if err == io.EOF {
			if i != 6 {
				t.Fatalf("%d records, want 5", i-1)
			}
			break
		}
		if err != nil || rec.Pos != i || len(rec.Body) != 10 || rec.Key == nil {
			t.Fatalf("record %d: %+v, %v", i, rec, err)
		}
		keys = append(keys, *rec.Key)
	}
	if want := []string{"k0", "k1", "k0", "k1", "k0"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	rec, _ := newSource(Text, 10, 1, 0, rand.New(rand.NewPCG(1, 1))).Next()
	if rec.Key != nil {
		t.Errorf("--keys 0 sent key %q", *rec.Key)
	}
}
