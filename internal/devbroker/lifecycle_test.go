package devbroker

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Point 9: health and readiness.
func TestHealth(t *testing.T) {
	h := start(t, Config{Users: []User{{Name: "a", Password: "b"}}})
	wantBody(t, h.do("GET", "/healthz", nil), 200, `{"status":"ok"}`+"\n")
	wantBody(t, h.do("GET", "/readyz", nil), 200, `{"status":"ready"}`+"\n")
	h.b.SetReady(false)
	wantBody(t, h.do("GET", "/readyz", nil), 503, `{"status":"not ready"}`+"\n")
	wantBody(t, h.do("GET", "/healthz", nil), 200, `{"status":"ok"}`+"\n")
	h.b.SetReady(true)
	wantBody(t, h.do("GET", "/readyz", nil), 200, `{"status":"ready"}`+"\n")
}

func TestAddrAndURL(t *testing.T) {
	h := start(t, Config{})
	if !regexp.MustCompile(`^127\.0\.0\.1:[1-9][0-9]*$`).MatchString(h.b.Addr()) || h.b.URL() != "http://"+h.b.Addr() {
		t.Fatalf("Addr %q URL %q", h.b.Addr(), h.b.URL())
	}
	b, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Addr() != "" {
		t.Fatalf("Addr before listening: %q", b.Addr())
	}
	// Handler serves without listening, for httptest.
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("Handler: %v %v", res, err)
	}
	res.Body.Close()
}

// Point 11: Close wakes every long poll (204) and stops serving; it is idempotent.
func TestCloseWakesWaiters(t *testing.T) {
	t.Parallel()
	h := startTopic(t, TopicSpec{})
	var ws []<-chan resp
	for i := 0; i < 3; i++ {
		ws = append(ws, async(func() resp { return h.consume("orders", "wait=10s") }))
	}
	ws = append(ws, async(func() resp { return h.batch("orders", "wait=10s&max=5") }))
	h.waitForWaiters(4)
	start := time.Now()
	if err := h.b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		wantEmpty(t, <-w, 204)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Close took %v with waiters", el)
	}
	if _, err := h.try("GET", "/healthz", nil); err == nil {
		t.Fatal("still serving after Close")
	}
	if err := h.b.Close(); err != nil {
		t.Fatal(err)
	}
}

// Point 11: ListenAndServe returns nil when its context is cancelled.
func TestListenAndServeContext(t *testing.T) {
	b, err := New(Config{Topics: []TopicSpec{{Name: "orders"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := async(func() error { return b.ListenAndServe(ctx) })
	eventually(t, 10*time.Second, "the broker to listen", func() bool { return b.Addr() != "" })
	res, err := http.Get(b.URL() + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", res, err)
	}
	res.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ListenAndServe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ListenAndServe did not return after cancel")
	}
	// A port in use is an error, not a hang.
	h := start(t, Config{})
	b2, _ := New(Config{Addr: h.b.Addr()})
	if err := b2.ListenAndServe(context.Background()); err == nil {
		t.Fatal("listening on a busy port succeeded")
	}
}

// helperEnv makes the test binary act as `narad dev` (see TestMain).
const helperEnv = "DEVBROKER_TEST_DEV"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(runDev())
	}
	os.Exit(m.Run())
}

// runDev is what `narad dev` does with the broker: signals cancel the context.
func runDev() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := New(Config{Topics: []TopicSpec{{Name: "orders"}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		for b.Addr() == "" {
			time.Sleep(time.Millisecond)
		}
		fmt.Println("listening", b.URL())
		for b.waiters.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		fmt.Println("waiting")
	}()
	if err := b.ListenAndServe(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Point 11: SIGINT and SIGTERM stop it cleanly, exit 0, answering its long polls.
func TestSignalsStopCleanly(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Whatever goes wrong, the child does not outlive the test.
		killer := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
		rd := bufio.NewReader(out)
		line, err := rd.ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("no address from the child: %v", err)
		}
		url := strings.TrimSpace(strings.TrimPrefix(line, "listening "))
		client := &http.Client{Timeout: 20 * time.Second}
		poll := async(func() *http.Response {
			res, err := client.Get(url + "/v1/topics/orders/consume?wait=10s")
			if err != nil {
				return nil
			}
			res.Body.Close()
			return res
		})
		if line, err := rd.ReadString('\n'); line != "waiting\n" {
			cmd.Process.Kill()
			t.Fatalf("the child did not see the long poll: %q %v", line, err)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v: exit %v, want 0", sig, err)
		}
		if res := <-poll; res == nil || res.StatusCode != 204 {
			t.Errorf("%v: the long poll got %v, want 204", sig, res)
		}
		killer.Stop()
	}
}

// The request log: one line per request.
func TestRequestLog(t *testing.T) {
	var mu sync.Mutex
	var buf strings.Builder
	h := start(t, Config{Log: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), Topics: []TopicSpec{{Name: "orders"}}})
	h.mustProduce("orders", "", "m")
	h.consume("orders", "")
	h.do("GET", "/nope", nil)
	mu.Lock()
	defer mu.Unlock()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"POST /v1/topics/orders/produce 202 ", "GET /v1/topics/orders/consume 200 ", "GET /nope 404 "}
	if len(lines) != 3 {
		t.Fatalf("log:\n%s", buf.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Fatalf("log line %q, want %q...", lines[i], w)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// The request log is read on the terminal narad dev runs in, and anyone who can reach
// the port chooses the path (no credentials are needed for a 404): its control
// characters are logged as visible escapes, never raw.
func TestRequestLogEscapesThePath(t *testing.T) {
	var mu sync.Mutex
	var buf strings.Builder
	h := start(t, Config{Log: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})})
	h.do("GET", "/v1/topics/%1b%5d0;owned%07%c2%9b%e2%80%ae/consume", nil)
	mu.Lock()
	defer mu.Unlock()
	got := buf.String()
	if strings.ContainsAny(got, "\x1b\x07\u009b\u202e") {
		t.Errorf("log %q carries raw control characters", got)
	}
	if !strings.HasPrefix(got, `GET /v1/topics/\x1b]0;owned\x07\u009b\u202e/consume 404 `) {
		t.Errorf("log %q: want the path with its escapes shown", got)
	}
}
