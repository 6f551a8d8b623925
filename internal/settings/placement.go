package settings

// PlacementInfo is what the product knows of one placement: the one table
// the tray, the CLI, the backend, the wire and the relay read instead of
// each spelling the placements out.
type PlacementInfo struct {
	ID Placement
	// Name is the place for a question or a message ("this PC's GPU");
	// Short is the tray's word for it ("this GPU").
	Name, Short string
	// Where says where pictures are read, for a sentence ("on this PC's GPU").
	Where string
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
	{ID: PlacementGPU, Name: "this PC's GPU", Short: "this GPU", Where: "on this PC's GPU", EditsConfig: true, Device: "gpu"},
	{ID: PlacementCPU, Name: "this PC's CPU", Short: "the CPU", Where: "on this PC's CPU", RelayRouted: true, Device: "cpu"},
	{ID: PlacementRemote, Name: "the second PC", Short: "the second PC", Where: "on the second PC", RelayRouted: true, Device: "second-pc"},
	{ID: PlacementOff, Name: "off", Short: "off", Where: "off (text only)", RelayRouted: true},
}

// Info is p's row of Placements (the zero row, with p as its name, for an
// unknown one).
func (p Placement) Info() PlacementInfo {
	for _, i := range Placements {
		if i.ID == p {
			return i
		}
	}
	return PlacementInfo{ID: p, Name: string(p), Short: string(p), Where: string(p)}
}

// Words says where pictures are read ("on this PC's GPU"); remote names
// the second PC when known ("on the second PC (gpu-laptop)").
func (p Placement) Words(remote string) string {
	w := p.Info().Where
	if p == PlacementRemote && remote != "" {
		w += " (" + remote + ")"
	}
	return w
}

// Name is the place for a menu or a question ("the second PC
// (gpu-laptop)").
func (p Placement) Name(remote string) string {
	n := p.Info().Name
	if p == PlacementRemote && remote != "" {
		n += " (" + remote + ")"
	}
	return n
}

// ShortName is the tray's word for p ("the second PC (gpu-laptop)").
func (p Placement) ShortName(remote string) string {
	n := p.Info().Short
	if p == PlacementRemote && remote != "" {
		n += " (" + remote + ")"
	}
	return n
}
