package textenc

import "testing"

func TestGroupDigits(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", 65536: "65,536", 1234567: "1,234,567",
		-1000: "-1,000", -999: "-999",
	} {
		if got := GroupDigits(n); got != want {
			t.Errorf("GroupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}
