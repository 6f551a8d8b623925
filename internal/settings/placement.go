package settings

import "strings"

// PlacementInfo is what the product knows of one placement: the one table
// the tray, the setup (window and terminal), the CLI, the backend, the
// service, the wire and the relay read instead of each spelling the
// placements out. A word about a placement, or a yes/no about one that
// decides a word or a step (does it read pictures, does it need the second
// PC, does it use this GPU's VRAM), comes from here;
// docscheck's TestPlacementLabelsOnlyHere holds that no Go file outside this package
// spells a label itself.
type PlacementInfo struct {
	ID Placement
	// Name is the place for a question or a message ("this PC's GPU");
	// Short is the tray's word for it in a sentence ("this GPU").
	Name, Short string
	// Menu is the tray's word after "Vision: " in its menu and status line
	// ("this GPU", "CPU", "second PC", "off").
	Menu string
	// Label is the setup's heading for the choice ("This PC's GPU", "A
	// second PC"), in the window and in the terminal.
	Label string
	// Where says where pictures are read, for a sentence ("on this PC's
	// GPU"); for off, what pictures are ("off (text only)").
	Where string
	// ReadsPictures: pictures are read there (all but off); a trial picture
	// can be measured there.
	ReadsPictures bool
	// SecondPC: pictures go to the paired second PC, which must be paired
	// (and reachable) for them to be read.
	SecondPC bool
	// UsesVRAM: the encoder takes VRAM on this PC's GPU, beside Strata.
	UsesVRAM bool
	// RelayRouted: Strata's config names strata-vision-relay, which reads
	// the settings per picture and routes it; a move among these placements
	// changes only the settings.
	RelayRouted bool
	// EditsConfig: moving to or from it edits Strata's config (and
	// restarts Strata: its VRAM is sized at start).
	EditsConfig bool
	// Device is where the encoder runs: "gpu", "cpu", "second-pc" or "".
	Device string
}

// Placements is the table, in menu order.
var Placements = []PlacementInfo{
	{ID: PlacementGPU, Name: "this PC's GPU", Short: "this GPU", Menu: "this GPU", Label: "This PC's GPU", Where: "on this PC's GPU",
		ReadsPictures: true, UsesVRAM: true, EditsConfig: true, Device: "gpu"},
	{ID: PlacementCPU, Name: "this PC's CPU", Short: "the CPU", Menu: "CPU", Label: "This PC's CPU", Where: "on this PC's CPU",
		ReadsPictures: true, RelayRouted: true, Device: "cpu"},
	{ID: PlacementRemote, Name: "the second PC", Short: "the second PC", Menu: "second PC", Label: "A second PC", Where: "on the second PC",
		ReadsPictures: true, SecondPC: true, RelayRouted: true, Device: "second-pc"},
	{ID: PlacementOff, Name: "off", Short: "off", Menu: "off", Label: "Off (text only)", Where: "off (text only)", RelayRouted: true},
}

// Info is p's row of Placements (the zero row, with p as its name, for an
// unknown one: it reads no pictures).
func (p Placement) Info() PlacementInfo {
	for _, i := range Placements {
		if i.ID == p {
			return i
		}
	}
	return PlacementInfo{ID: p, Name: string(p), Short: string(p), Menu: string(p), Label: string(p), Where: string(p)}
}

// ReadsPictures: pictures are read at p (false for off, unset and unknown).
func (p Placement) ReadsPictures() bool { return p.Info().ReadsPictures }

// SecondPC: p reads pictures on the paired second PC.
func (p Placement) SecondPC() bool { return p.Info().SecondPC }

// Measurable lists the placements a trial picture can be read at, in menu
// order.
func Measurable() []Placement {
	var out []Placement
	for _, i := range Placements {
		if i.ReadsPictures {
			out = append(out, i.ID)
		}
	}
	return out
}

// withRemote adds the second PC's name to w for the second PC.
func (p Placement) withRemote(w, remote string) string {
	if p.SecondPC() && remote != "" {
		w += " (" + remote + ")"
	}
	return w
}

// Words says where pictures are read ("on this PC's GPU"); remote names
// the second PC when known ("on the second PC (gpu-laptop)").
func (p Placement) Words(remote string) string { return p.withRemote(p.Info().Where, remote) }

// Name is the place for a menu or a question ("the second PC
// (gpu-laptop)").
func (p Placement) Name(remote string) string { return p.withRemote(p.Info().Name, remote) }

// ShortName is the tray's word for p ("the second PC (gpu-laptop)").
func (p Placement) ShortName(remote string) string { return p.withRemote(p.Info().Short, remote) }

// MenuName is the tray's word after "Vision: " ("second PC (gpu-laptop)").
func (p Placement) MenuName(remote string) string { return p.withRemote(p.Info().Menu, remote) }

// Pictures says what happens to pictures, as a clause: "pictures are read
// on this PC's GPU", "pictures are read on the second PC (gpu-laptop)",
// "pictures are off (text only)". Unset counts as off.
func (p Placement) Pictures(remote string) string {
	if p == "" {
		p = PlacementOff
	}
	if !p.ReadsPictures() {
		return "pictures are " + p.Info().Where
	}
	return "pictures are read " + p.Words(remote)
}

// UpperFirst is s with its first letter upper case, for a word from the
// table that starts a sentence or a heading ("The second PC").
func UpperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
