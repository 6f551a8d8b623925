package docscheck

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
)

// leadOwned are files that still spell a placement's words, owned by
// another change under way; each names what replaces the words. The test
// logs them instead of failing; an entry whose file no longer spells a
// label fails, so the list only shrinks.
var leadOwned = map[string]string{}

// placementLabels are the words of the placements table a Go file must not
// spell itself: each row's name, short word, label and where-words, and the
// tray's "Vision: ..." lines. (The menu word alone, "second PC", also names
// the machine, as in a page title; it counts only in the tray's line.) A
// word that is also a placement's wire value ("off") is left out: those
// literals are everywhere for other reasons.
func placementLabels() map[string]settings.Placement {
	ids := map[string]bool{}
	for _, p := range settings.Placements {
		ids[strings.ToLower(string(p.ID))] = true
	}
	out := map[string]settings.Placement{}
	for _, p := range settings.Placements {
		for _, w := range []string{p.Name, p.Short, p.Label, p.Where, "Vision: " + p.Menu, "Vision: " + p.Where} {
			if !ids[strings.ToLower(w)] {
				out[strings.ToLower(w)] = p.ID
			}
		}
	}
	return out
}

// TestPlacementLabelsOnlyHere: no non-test Go file outside internal/settings
// has a string literal (a line of one) that is one of the placements
// table's words ("this PC's GPU", "A second PC", "Vision: this GPU", "on
// the second PC", in any case): the tray, the setup, the service and the
// CLI read them from settings.Placements, so a placement is worded one way
// everywhere.
func TestPlacementLabelsOnlyHere(t *testing.T) {
	labels := placementLabels()
	found := map[string][]string{}
	for _, l := range stringLines(t, moduleRoot(t)) {
		if strings.HasPrefix(l.file, "internal/settings/") {
			continue
		}
		if p, ok := labels[strings.ToLower(l.text)]; ok {
			found[l.file] = append(found[l.file], "line "+strconv.Itoa(l.n)+" "+strconv.Quote(l.text)+" ("+string(p)+")")
		}
	}
	var files []string
	for f := range found {
		files = append(files, f)
	}
	sort.Strings(files)
	var problems []string
	for _, f := range files {
		if why, ok := leadOwned[f]; ok {
			t.Logf("%s still spells placement words (%s): %s", f, why, strings.Join(found[f], "; "))
			continue
		}
		problems = append(problems, f+": "+strings.Join(found[f], "; ")+": read them from settings.Placements (Info, Name, ShortName, MenuName, Words, Pictures)")
	}
	for f := range leadOwned {
		if _, ok := found[f]; !ok {
			problems = append(problems, f+" no longer spells placement words: take it off leadOwned")
		}
	}
	report(t, "files that spell a placement's words themselves", problems)
}
