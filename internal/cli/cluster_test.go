package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A node older than v3.1 does not know ?dry_run=true: it ignores it, as any query it
// does not know, starts the decommission and answers 204. A dry run that gets no
// verdict back says the member may be draining now (exit 1), never "nothing changed".
func TestDecommissionDryRunWithoutVerdict(t *testing.T) {
	var asked atomic.Int32
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/cluster/members/node-3/decommission" {
			asked.Add(1)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		http.NotFound(w, r)
	}))
	defer node.Close()
	for _, output := range []string{"text", "json"} {
		r := runCLI(t, nil, false, "cluster", "decommission", "node-3", "--dry-run", "-o", output, "-s", node.URL)
		if r.code != ExitFailed {
			t.Errorf("-o %s: exit %d, want %d (stderr %q)", output, r.code, ExitFailed, r.stderr)
		}
		if strings.Contains(r.stderr, "nothing changed") || r.stdout != "" {
			t.Errorf("-o %s: said nothing changed: stdout %q stderr %q", output, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "node-3 may be draining now") || !strings.Contains(r.stderr, "narad cluster decommission node-3 --cancel") {
			t.Errorf("-o %s: stderr %q: want what may have happened and how to stop it", output, r.stderr)
		}
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("%d dry runs asked, want 2 (one each, never retried)", n)
	}
}

// A dry run's exit code is its verdict: 0 when the decommission would go ahead, 1 when
// it would be refused, so `--dry-run && decommission --yes` is a safe script. The
// report stays on stdout either way; a refusal's reasons are the fatal line.
func TestDecommissionDryRunExitFollowsVerdict(t *testing.T) {
	for _, tc := range []struct {
		verdict string
		code    int
		stderr  string
	}{
		{`{"member":"node-3","would_decommission":true,"reasons":[]}`, ExitOK, ""},
		{`{"member":"node-3","would_decommission":false,"reasons":[{"code":"last_replica","message":"node-3 holds the last replica of orders/2"}]}`,
			ExitFailed, "narad: decommissioning node-3 would be refused: node-3 holds the last replica of orders/2 (dry run: nothing changed; see narad cluster members)\n"},
		{`{"member":"node-3","would_decommission":false}`,
			ExitFailed, "narad: decommissioning node-3 would be refused: the node gave no reason (dry run: nothing changed; see narad cluster members)\n"},
	} {
		node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/v1/cluster/members/node-3/decommission" && r.URL.Query().Get("dry_run") == "true" {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(tc.verdict))
				return
			}
			http.NotFound(w, r)
		}))
		for _, output := range []string{"text", "json"} {
			r := runCLI(t, nil, false, "cluster", "decommission", "node-3", "--dry-run", "-o", output, "-s", node.URL)
			if r.code != tc.code {
				t.Errorf("%s -o %s: exit %d, want %d (stderr %q)", tc.verdict, output, r.code, tc.code, r.stderr)
			}
			if r.stderr != tc.stderr {
				t.Errorf("%s -o %s: stderr %q, want %q", tc.verdict, output, r.stderr, tc.stderr)
			}
			if want := "would_decommission"; output == "json" && !strings.Contains(r.stdout, want) {
				t.Errorf("%s -o json: stdout %q, want the verdict", tc.verdict, r.stdout)
			}
			if want := "(dry run: nothing changed)"; output == "text" && !strings.Contains(r.stdout, want) {
				t.Errorf("%s: stdout %q, want the report", tc.verdict, r.stdout)
			}
		}
		node.Close()
	}
}
