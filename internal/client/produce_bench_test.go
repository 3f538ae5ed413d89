package client

import (
	"fmt"
	"testing"
)

// batchOf is 100 messages of one kind, as produce --lines or --json would send them.
func batchOf(kind string) []ProduceMessage {
	msgs := make([]ProduceMessage, 100)
	for i := range msgs {
		var p string
		switch kind {
		case "text":
			p = fmt.Sprintf("order-%06d,customer-%d,4999", i, i%50)
		case "json":
			p = fmt.Sprintf(`{"order_id":"ord_%06d","customer":"customer-%d","amount":4999}`, i, i%50)
		case "binary":
			p = fmt.Sprintf("\x89PNG\r\n\x1a\n%06d\xff\xfe", i)
		}
		k := fmt.Sprintf("customer-%d", i%50)
		msgs[i] = ProduceMessage{Payload: []byte(p), Key: &k}
	}
	return msgs
}

// BenchmarkAppendProduceBatch is the body of a 100-message batch produce, into a
// buffer reused as ProduceBatch's caller would not (ProduceBatch allocates one per
// request: see BenchmarkProduceBatchBody).
func BenchmarkAppendProduceBatch(b *testing.B) {
	for _, kind := range []string{"text", "json", "binary"} {
		b.Run(kind, func(b *testing.B) {
			msgs := batchOf(kind)
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendProduceBatch(buf[:0], msgs)
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

// BenchmarkProduceBatchBody is what ProduceBatch spends on the body of one request:
// sizing, a fresh buffer, encoding.
func BenchmarkProduceBatchBody(b *testing.B) {
	msgs := batchOf("json")
	b.ReportAllocs()
	for b.Loop() {
		_ = AppendProduceBatch(make([]byte, 0, batchBodyHint(msgs)), msgs)
	}
}
