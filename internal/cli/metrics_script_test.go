package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// scrape [-until REGEX] PATH gets http://$METRICS/PATH (a worker's --metrics-addr)
// and prints "HTTP CODE", a blank line and the body. With -until it asks again every
// 20 ms (up to 10 s) until that output matches REGEX. ! scrape: no answer at all.
func cmdScrape(ts *testscript.TestScript, neg bool, args []string) {
	var until *regexp.Regexp
	if len(args) == 3 && args[0] == "-until" {
		until = regexp.MustCompile(args[1])
		args = args[2:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: scrape [-until REGEX] PATH")
	}
	url := "http://" + ts.Getenv("METRICS") + args[0]
	c := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := get(c, url)
		if neg {
			if err == nil {
				ts.Fatalf("scrape %s: answered, want no answer", args[0])
			}
			return
		}
		if err == nil && (until == nil || until.MatchString(out)) {
			fmt.Fprint(ts.Stdout(), out)
			return
		}
		if until == nil || time.Now().After(deadline) {
			if err != nil {
				ts.Fatalf("scrape %s: %v", args[0], err)
			}
			ts.Fatalf("scrape %s: no match for %s after 10s; last:\n%s", args[0], until, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("HTTP %d\n\n%s", resp.StatusCode, body), nil
}

// statsmatch METRICS STATS TOPIC checks that every narad_worker_messages_total of
// TOPIC in the scrape saved in METRICS is the counter of that name in the --stats=json
// line of STATS, and that there is one for each of the line's message outcomes.
func cmdStatsMatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: statsmatch METRICS STATS TOPIC")
	}
	var stats map[string]int64
	for line := range strings.Lines(ts.ReadFile(args[1])) {
		if strings.HasPrefix(line, `{"received":`) {
			ts.Check(json.Unmarshal([]byte(line), &stats))
		}
	}
	if stats == nil {
		ts.Fatalf("no --stats=json line in %s", args[1])
	}
	series := regexp.MustCompile(`^narad_worker_messages_total\{outcome="([a-z_]+)",topic="` + regexp.QuoteMeta(args[2]) + `"\} (\d+)$`)
	seen := 0
	sc := bufio.NewScanner(strings.NewReader(ts.ReadFile(args[0])))
	for sc.Scan() {
		m := series.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, err := strconv.ParseInt(m[2], 10, 64)
		ts.Check(err)
		want, ok := stats[m[1]]
		if !ok {
			ts.Fatalf("outcome %s is not in --stats", m[1])
		}
		if n != want {
			ts.Fatalf("narad_worker_messages_total{outcome=%q} is %d, --stats says %d", m[1], n, want)
		}
		seen++
		fmt.Fprintf(ts.Stdout(), "%s=%d\n", m[1], n)
	}
	// --stats has two counters that are not outcomes of a message: retries and bugs.
	if seen != len(stats)-2 {
		ts.Fatalf("%d outcomes in the scrape, %d in --stats (less retries and bugs)", seen, len(stats)-2)
	}
}
