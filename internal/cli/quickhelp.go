package cli

import (
	"sort"
	"strings"
)

// quickHelp is what `narad COMMAND... --help` prints, from the texts cobra rendered
// when they were generated (helptext_gen.go), so that a help costs no command tree:
// building a command's flags and laying them out was most of what `narad sub --help`
// cost beyond the libraries' start-up. Only the plain form takes it (the command's
// names as cobra names them, then --help or -h); anything else, an alias, a flag or an
// argument, goes through cobra. TestQuickHelpIsCobras keeps the texts current
// (`go test ./internal/cli -run QuickHelp -update` rewrites them).
func quickHelp(args []string) (string, bool) {
	n := len(args)
	if n == 0 || (args[n-1] != "--help" && args[n-1] != "-h") {
		return "", false
	}
	for _, a := range args[:n-1] {
		if a == "" || a[0] == '-' {
			return "", false
		}
	}
	path := strings.Join(args[:n-1], " ")
	i := sort.Search(len(helpTexts), func(i int) bool { return helpTexts[i].path >= path })
	if i < len(helpTexts) && helpTexts[i].path == path {
		return helpTexts[i].text, true
	}
	return "", false
}
