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
