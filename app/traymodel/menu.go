// Package traymodel is what the tray shows, as pure functions of the control
// API's state: the menu (titles, visibility, check marks), the icon, the
// tooltip, the notifications over state transitions and the decision whether
// an action needs confirming. It imports no GUI toolkit, so all of it is
// table-tested without a display; app/ only copies the result onto systray.
package traymodel

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/lendshown"
	"github.com/strata-companion/companion/internal/settings"
)

// ItemID names one entry of the tray menu. systray cannot remove items, so
// the tray builds all of them once, in this order, and only retitles, shows
// and hides them.
type ItemID int

const (
	ItemServer       ItemID = iota // status: the server's state, model, uptime
	ItemServerDetail               // status: why it failed / what to do (hidden when empty)
	ItemVision                     // status: where vision runs, the encoder, the last picture
	ItemRemote                     // status: the second PC (hidden unless vision runs there)
	ItemLastPicture                // status: where the last picture was read, wakes, failovers (hidden when none)
	ItemLastMeasured               // status: the last trial picture measured where pictures are read now (hidden when none)
	ItemProgress                   // status: an action in progress (hidden when none)
	ItemLendCode                   // lending: the pairing code, or "Get a new pairing code..." (hidden unless this PC lends)
	ItemLendPaired                 // status: the PCs paired to this one's GPU (hidden unless this PC lends)
	ItemLendStop                   // lending: Stop lending... (hidden unless this PC lends)
	ItemVisionGPU                  // choice: vision on this PC's GPU
	ItemVisionCPU                  // choice: vision on this PC's CPU
	ItemVisionRemote               // choice: vision on the second PC
	ItemVisionOff                  // choice: no vision
	ItemFallback                   // switch: read on this PC's CPU when the second PC is off (hidden without a second PC)
	ItemModel                      // submenu: "Model: <tag>", the configs below it (hidden without an install)
	ItemModel0                     // the Model submenu's slots, one per config (MaxModels of them)
	ItemModel1
	ItemModel2
	ItemModel3
	ItemModel4
	ItemModel5
	ItemModel6
	ItemModel7
	ItemRepair      // put the companion's placement back into a config Strata's setup rewrote (hidden unless it did)
	ItemRestart     // Restart Strata
	ItemUnload      // Free the GPU: Strata unloads its model (shown while the model is loaded)
	ItemUpdate      // Update Strata...
	ItemOpenBrowser // Open Strata in the browser
	ItemViewLogs    // View logs
	ItemSetup       // Open setup...
	ItemAutostart   // Start tray at login (checkbox)
	ItemQuit        // Quit tray
	NumItems
)

// MaxModels is how many configs the Model submenu lists (systray items are
// made once; a longer list says where to see the rest).
const MaxModels = 8

// Parent is the submenu id belongs to (-1: the top menu).
func (id ItemID) Parent() ItemID {
	if id >= ItemModel0 && id < ItemModel0+MaxModels {
		return ItemModel
	}
	return -1
}

// ModelSlot is the config index of a Model submenu slot (-1 for other items).
func (id ItemID) ModelSlot() int {
	if id.Parent() == ItemModel {
		return int(id - ItemModel0)
	}
	return -1
}

// SeparatorAfter lists the items followed by a separator line.
var SeparatorAfter = map[ItemID]bool{ItemProgress: true, ItemFallback: true, ItemSetup: true}

// Checkable reports whether id has a check box (the vision choices and the
// autostart switch).
func (id ItemID) Checkable() bool {
	switch id {
	case ItemVisionGPU, ItemVisionCPU, ItemVisionRemote, ItemVisionOff, ItemAutostart, ItemFallback:
		return true
	}
	return id.Parent() == ItemModel
}

// Placement is the placement a vision choice item stands for ("" for other
// items): the choices are settings.Placements, in the table's order.
func (id ItemID) Placement() string {
	if i := int(id - ItemVisionGPU); id >= ItemVisionGPU && id <= ItemVisionOff && i < len(settings.Placements) {
		return string(settings.Placements[i].ID)
	}
	return ""
}

// visionTitle is a vision choice's menu title ("Vision: second PC
// (gpu-laptop)"), from the placements table.
func visionTitle(p, remoteName string) string {
	return "Vision: " + settings.Placement(p).MenuName(remoteName)
}

// Item is one menu entry as it should look.
type Item struct {
	Title   string
	Visible bool
	Enabled bool
	Checked bool
}

// Menu is everything the tray shows.
type Menu struct {
	Icon    string // an assets.Tray* name
	Tooltip string
	Items   [NumItems]Item
}

// Reach says whether the tray can talk to the service.
type Reach int

const (
	Connected    Reach = iota
	NotRunning         // no address file: not installed or never started
	Unreachable        // an address file, but nothing answers (stopped, crashed, restarting)
	Unauthorized       // it answers, but refuses our token (the token file is not readable, or stale)
)

// Input is what the menu is a function of.
type Input struct {
	Now time.Time
	// State is the service's snapshot; nil when Reach != Connected.
	State *controlapi.State
	Reach Reach
	// Problem is the reason in words when the service is not reachable.
	Problem string
	// RemoteName is the paired second PC from the settings ("" when none).
	RemoteName string
	// Pending is an action the user started that is not finished yet.
	Pending *Pending
	// Autostart: the tray starts at login (the user turned it on).
	Autostart bool
	// FallbackCPU is the settings' fallback_cpu.
	FallbackCPU bool
	// Relay is what the relay reported: the last picture, wakes, failovers.
	Relay RelayView
	// Configs is the install's configs as the service lists them (nil:
	// not read yet).
	Configs *controlapi.ConfigList
	// UpdateLine is the last line of an update of Strata under way ("" when none).
	UpdateLine string
	// NoGPUVision says why this PC's GPU cannot read pictures, as the probe
	// found ("" when it can, or before the probe has answered).
	NoGPUVision string
	// Measured is the settings' last trial pictures per place (nil: none).
	Measured *settings.Measured
	// Lending is this account's view of lending this PC's GPU (nil: this
	// PC does not lend; lendshown.Read), read from its file: a lending PC
	// may run no service at all.
	Lending *lendshown.Shown
	// LendAction is a lending command under way (LendActionCode,
	// LendActionStop; "" when none).
	LendAction string
}

// DetailWidth is the most characters a status line under the first one
// shows: a menu is as wide as its widest line, and a whole error message
// on one line makes it wider than the screen. View logs has the rest.
const DetailWidth = 76

// NoInstall reports a service that runs with no Strata install chosen yet
// (installed before Strata was, or its folder was removed).
func NoInstall(st *controlapi.State) bool {
	if st == nil || st.Config.StrataRoot != "" || st.Config.Path != "" {
		return false
	}
	switch st.Server.Phase {
	case controlapi.PhaseReady, controlapi.PhaseStarting, controlapi.PhaseRestarting:
		return false // something runs: an install exists
	}
	return true
}

// Pending is an action in progress, shown until the server is ready again.
type Pending struct {
	Action    string // "vision", "restart", "unload", "model", "update" or "repair"
	Placement string // for "vision"; the config's tag for "model"
	Started   time.Time
	// Err is set when the request failed: shown once in the progress line.
	Err string
	// NoRestart: a vision switch that leaves Strata running (done once the
	// placement shows, with no new start to wait for).
	NoRestart bool
}

// Build computes the whole menu from in. It is pure: same input, same menu.
func Build(in Input) Menu {
	var m Menu
	for i := range m.Items {
		m.Items[i] = Item{Visible: true, Enabled: true}
	}
	status := func(id ItemID, title string) {
		m.Items[id] = Item{Title: title, Visible: title != "", Enabled: false}
	}
	st := in.State
	if in.Reach != Connected || st == nil {
		status(ItemServer, "Strata Companion "+serviceDown(in.Reach))
		status(ItemServerDetail, clipTo(in.Problem, DetailWidth))
		status(ItemVision, "")
		status(ItemRemote, "")
		status(ItemLastPicture, "")
		status(ItemLastMeasured, "")
		m.Icon = assets.TrayOffline
		m.Tooltip = clip("Strata Companion: " + serviceDown(in.Reach))
	} else {
		status(ItemServer, serverLine(st, in.Now))
		status(ItemServerDetail, clipTo(serverDetail(st), DetailWidth))
		status(ItemVision, visionLine(st, in.Now))
		status(ItemRemote, remoteLine(st, in.Now))
		last := in.Relay.Line(in.Now)
		if settings.Placement(st.Vision.Placement) == settings.PlacementOff {
			last = "" // pictures are refused: where the last one was read is no news
		}
		status(ItemLastPicture, last)
		status(ItemLastMeasured, lastMeasuredLine(in.Measured, st.Vision.Placement))
		m.Icon = Icon(st)
		m.Tooltip = Tooltip(st)
		if NoInstall(st) {
			m.Tooltip = "Strata Companion: no Strata install chosen yet (Open setup...)"
		}
	}
	status(ItemProgress, progressLine(in))
	if in.Pending != nil && in.Pending.Err == "" {
		m.Icon = assets.TrayBusy
	}

	// The vision choices: a check mark on the configured one.
	current := ""
	if st != nil {
		current = st.Vision.Placement
	}
	why := ""
	switch {
	case in.Reach != Connected || st == nil:
		why = "service not running"
	case NoInstall(st):
		// The service refuses them until the setup has chosen the install.
		why = "choose Strata's folder in setup first"
	case in.Pending != nil && in.Pending.Err == "":
		why = "switching"
	case st.Server.Phase == controlapi.PhaseStarting || st.Server.Phase == controlapi.PhaseRestarting:
		why = "wait until Strata is ready"
	}
	for id := ItemVisionGPU; id <= ItemVisionOff; id++ {
		p := settings.Placement(id.Placement())
		it := Item{Title: visionTitle(string(p), in.RemoteName), Visible: true, Enabled: why == "", Checked: string(p) == current}
		if why != "" && !it.Checked {
			it.Title += " (" + why + ")"
		} else if p.Info().UsesVRAM && in.NoGPUVision != "" && !it.Checked {
			// The probe says this GPU cannot run the encoder.
			it.Enabled = false
			it.Title += " (" + clipTo(in.NoGPUVision, 40) + ")"
		}
		if p.SecondPC() && in.RemoteName == "" && why != "service not running" && !NoInstall(st) {
			// Not paired yet: the item stays clickable and opens setup on
			// the second-PC page instead of switching.
			it.Title = visionTitle(string(p), "not set up: set up...")
			it.Enabled = why == "" || why == "wait until Strata is ready"
		}
		m.Items[id] = it
	}

	connected := in.Reach == Connected && st != nil
	m.Items[ItemFallback] = Item{Title: FallbackTitle, Visible: in.RemoteName != "", Enabled: connected, Checked: in.FallbackCPU}
	buildModels(&m, in, connected, why)
	m.Items[ItemRestart] = Item{Title: "Restart Strata", Visible: true, Enabled: connected && !NoInstall(st) && (in.Pending == nil || in.Pending.Err != "")}
	m.Items[ItemUnload] = Item{Title: UnloadTitle, Visible: ModelLoaded(st) && connected,
		Enabled: in.Pending == nil || in.Pending.Err != ""}
	m.Items[ItemUpdate] = Item{Title: "Update Strata...", Visible: connected && st.Config.StrataRoot != "", Enabled: why == "" && in.UpdateLine == ""}
	if in.UpdateLine != "" {
		m.Items[ItemUpdate].Title = "Update Strata (updating)"
	}
	m.Items[ItemRepair] = Item{Visible: false}
	if connected && len(st.Config.Rewritten) > 0 {
		m.Items[ItemRepair] = Item{Title: repairTitle(st), Visible: true, Enabled: why == ""}
	}
	if connected && st.Server.Phase == controlapi.PhaseStopped {
		m.Items[ItemRestart].Title = "Start Strata"
	}
	if connected && st.Server.Foreign != nil {
		// Starting into a port another program holds fails: the service
		// starts its own once that one ends.
		m.Items[ItemRestart] = Item{Title: "Start Strata (starts by itself once the port is free)", Visible: true, Enabled: false}
	}
	m.Items[ItemOpenBrowser] = Item{Title: "Open Strata in the browser", Visible: true, Enabled: connected && BrowserURL(st) != "" && st.Server.Phase == controlapi.PhaseReady}
	m.Items[ItemViewLogs] = Item{Title: "View logs", Visible: true, Enabled: true}
	m.Items[ItemSetup] = Item{Title: "Open setup...", Visible: true, Enabled: true}
	m.Items[ItemAutostart] = Item{Title: "Start tray at login", Visible: true, Enabled: true, Checked: in.Autostart}
	m.Items[ItemQuit] = Item{Title: "Quit tray", Visible: true, Enabled: true}
	buildLend(&m, in)
	if LenderOnly(in) {
		lenderOnly(&m, in)
	}
	return m
}

// buildModels fills the Model submenu: the parent names the running
// config's tag, each slot a config (checked: the one that runs; disabled
// when it cannot run as it is, with why).
func buildModels(m *Menu, in Input, connected bool, why string) {
	m.Items[ItemModel] = Item{Visible: false}
	for i := 0; i < MaxModels; i++ {
		m.Items[ItemModel0+ItemID(i)] = Item{Visible: false}
	}
	l := in.Configs
	if !connected || l == nil || len(l.Configs) == 0 {
		return
	}
	title := "Model"
	for _, e := range l.Configs {
		if e.Running {
			title = "Model: " + e.Tag
		}
	}
	m.Items[ItemModel] = Item{Title: title, Visible: true, Enabled: true}
	for i, e := range l.Configs {
		if i >= MaxModels {
			break
		}
		t := e.Tag
		if e.ModelName != "" {
			t += " (" + e.ModelName + ")"
		}
		it := Item{Title: t, Visible: true, Enabled: e.Ready && why == "", Checked: e.Running}
		switch {
		case i == MaxModels-1 && len(l.Configs) > MaxModels:
			it = Item{Title: fmt.Sprintf("%d more: strata-service model", len(l.Configs)-MaxModels+1), Visible: true}
		case !e.Ready:
			it.Title += " (not ready: " + clipWords(e.Problem, 60) + ")"
		case why != "" && !e.Running:
			it.Title += " (" + why + ")"
		}
		m.Items[ItemModel0+ItemID(i)] = it
	}
}

func clipWords(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func serviceDown(r Reach) string {
	switch r {
	case NotRunning:
		return "service not installed or not running"
	case Unauthorized:
		return "service refuses this user"
	default:
		return "service not reachable"
	}
}

// Icon picks the tray icon for a reachable service.
func Icon(st *controlapi.State) string {
	if NoInstall(st) {
		return assets.TrayOffline // waiting for the setup, not an error
	}
	switch st.Server.Phase {
	case controlapi.PhaseReady:
		if Degraded(st) != "" || st.Vision.Encoder == controlapi.EncoderDegraded {
			return assets.TrayDegraded
		}
		return assets.TrayReady
	case controlapi.PhaseStarting, controlapi.PhaseRestarting:
		return assets.TrayBusy
	case controlapi.PhaseFailed:
		return assets.TrayError
	default: // stopped, or a phase this tray does not know yet
		return assets.TrayOffline
	}
}

// Degraded says, in a few words, why pictures do not work while the server
// does ("" when everything configured works).
func Degraded(st *controlapi.State) string {
	p := settings.Placement(st.Vision.Placement)
	if !p.ReadsPictures() {
		return ""
	}
	if p.SecondPC() && st.Remote != nil && !st.Remote.Reachable {
		return "not reachable"
	}
	if st.Vision.Encoder == controlapi.EncoderFailed {
		return "encoder failed"
	}
	return ""
}

// Tooltip says the state, the model, where vision runs and its state.
func Tooltip(st *controlapi.State) string {
	parts := []string{"Strata: " + phaseWord(st.Server)}
	if st.Server.Model != "" {
		parts = append(parts, st.Server.Model)
	}
	v := "vision " + placementWords(st)
	if d := Degraded(st); d != "" {
		v += ", " + d + ": text only"
	} else if settings.Placement(st.Vision.Placement).ReadsPictures() {
		v += ", " + encoderWord(st.Vision.Encoder)
	}
	parts = append(parts, v)
	return clip(strings.Join(parts, " · "))
}

// clipTo keeps s within n characters, cut at a word with "…".
func clipTo(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := n - 1
	for i := cut; i > n/2; i-- {
		if r[i] == ' ' {
			cut = i
			break
		}
	}
	return strings.TrimRight(string(r[:cut]), " ,;:") + "…"
}

// clip keeps a tooltip within what Windows shows (127 characters).
func clip(s string) string {
	r := []rune(s)
	if len(r) > 127 {
		return string(r[:126]) + "…"
	}
	return s
}

func phaseWord(s controlapi.ServerState) string {
	switch s.Phase {
	case controlapi.PhaseReady:
		return "ready"
	case controlapi.PhaseStarting:
		if s.Detail != "" {
			return "starting (" + s.Detail + ")"
		}
		return "starting"
	case controlapi.PhaseRestarting:
		return "restarting"
	case controlapi.PhaseFailed:
		return "failed"
	case controlapi.PhaseStopped:
		return "stopped"
	case "":
		return "state unknown"
	}
	return s.Phase
}

func serverLine(st *controlapi.State, now time.Time) string {
	s := st.Server
	if NoInstall(st) {
		return "Strata: not set up yet"
	}
	parts := []string{"Strata: " + phaseWord(s)}
	if s.Model != "" {
		parts = append(parts, s.Model)
	}
	if s.Version != "" {
		parts = append(parts, "Strata "+s.Version)
	}
	switch s.Phase {
	case controlapi.PhaseReady:
		if !s.Since.IsZero() {
			parts = append(parts, "since "+Clock(s.Since, now))
		}
	case controlapi.PhaseStarting, controlapi.PhaseRestarting:
		if !s.Since.IsZero() {
			parts = append(parts, "for "+Duration(now.Sub(s.Since)))
		}
	}
	return strings.Join(parts, " · ")
}

func serverDetail(st *controlapi.State) string {
	s := st.Server
	if NoInstall(st) {
		// The finder's whole error (where it looked, the command line's
		// flags) is for the log; the tray says what to do here.
		return "  No Strata install chosen yet: choose its folder in Open setup..."
	}
	if f := s.Foreign; f != nil {
		return "  " + foreignWords(f)
	}
	switch s.Phase {
	case controlapi.PhaseFailed:
		msg := s.LastError
		if msg == "" {
			msg = s.Detail
		}
		if msg == "" {
			msg = "see View logs for why"
		}
		return "  " + msg
	case controlapi.PhaseRestarting:
		if s.Restarts > 0 {
			return fmt.Sprintf("  restarted %d times after crashes", s.Restarts)
		}
	case controlapi.PhaseStopped:
		if !st.Config.Valid && st.Config.Problem != "" {
			return "  " + st.Config.Problem
		}
	}
	return ""
}

// foreignWords names a server the service did not start on Strata's port.
func foreignWords(f *controlapi.ForeignServer) string {
	if f.PID <= 0 {
		return fmt.Sprintf("Port %d is held by another program: close it", f.Port)
	}
	name := "a program"
	if fs := strings.Fields(f.Cmdline); len(fs) > 0 {
		name = fs[0]
		if i := strings.LastIndexAny(name, `/\`); i >= 0 {
			name = name[i+1:]
		}
	}
	return fmt.Sprintf("Port %d held by %s (process %d), not by the service: close it", f.Port, name, f.PID)
}

// repairTitle is the one repair row for everything Strata's setup changed
// (the findings in the state): the pictures alone keep their own words;
// with keys too, one row names them all.
func repairTitle(st *controlapi.State) string {
	var what []string
	add := func(w string) {
		for _, x := range what {
			if x == w {
				return
			}
		}
		what = append(what, w)
	}
	for _, f := range st.Config.Rewritten {
		switch {
		case strings.HasPrefix(f, "the relay was replaced"):
			add("pictures")
		case strings.HasPrefix(f, "host went"):
			add("host")
		case strings.HasPrefix(f, "port went"):
			add("port")
		case strings.HasPrefix(f, "api_key"):
			add("key")
		case strings.HasSuffix(f, " was dropped"):
			add(strings.TrimSuffix(f, " was dropped"))
		}
	}
	if len(what) == 1 && what[0] == "pictures" {
		return "Put pictures back " + placementWords(st) + " (Strata's setup changed the config)"
	}
	return clipWords("Put back what Strata's setup changed: "+strings.Join(what, ", "), 80)
}

func placementWords(st *controlapi.State) string {
	p := settings.Placement(st.Vision.Placement)
	if !p.ReadsPictures() {
		return settings.PlacementOff.Info().Short
	}
	host := ""
	if st.Remote != nil {
		host = st.Remote.Host
	}
	return "on " + p.ShortName(host)
}

// encoderWord is the state's word from the one table (controlapi.EncoderStates).
func encoderWord(e string) string {
	return "encoder " + controlapi.EncoderStateInfo(e).Word
}

// lastMeasuredLine is the last trial picture for the place pictures are
// read now ("" when none was measured there).
func lastMeasuredLine(m *settings.Measured, placement string) string {
	s := settings.Settings{Measured: m}
	if r := s.LastMeasured(settings.Placement(placement)); r != nil {
		return "Last measured: " + r.Summary()
	}
	return ""
}

func visionLine(st *controlapi.State, now time.Time) string {
	v := st.Vision
	p := settings.Placement(v.Placement)
	if !p.ReadsPictures() {
		return "Vision: " + settings.PlacementOff.Words("")
	}
	where := p.MenuName("")
	enc := "encoder " + st.EncoderText(func(t time.Time) string { return Clock(t, now) })
	if v.Encoder == controlapi.EncoderFailed && v.Error != "" {
		enc = encoderWord(v.Encoder) + " (" + v.Error + ")"
	}
	parts := []string{"Vision: " + where, enc}
	if !v.LastPicture.IsZero() {
		p := "last picture " + Clock(v.LastPicture, now)
		if v.LastPictureMS > 0 {
			p += fmt.Sprintf(" (%.1f s)", float64(v.LastPictureMS)/1000)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " · ")
}

func remoteLine(st *controlapi.State, now time.Time) string {
	r := st.Remote
	if r == nil || !settings.Placement(st.Vision.Placement).SecondPC() {
		return ""
	}
	name := "Second PC"
	if r.Host != "" {
		name += " " + r.Host
	}
	if !r.Reachable {
		s := name + ": not reachable"
		if r.Reason != "" {
			s += " (" + r.Reason + ")"
		}
		if !r.Since.IsZero() {
			s += " since " + Clock(r.Since, now)
		}
		return s
	}
	parts := []string{name + ": reachable"}
	if r.RTTms > 0 {
		parts = append(parts, fmt.Sprintf("%.1f ms", r.RTTms))
	}
	if r.FreeVRAMMiB > 0 {
		parts = append(parts, fmt.Sprintf("%.1f GiB VRAM free", float64(r.FreeVRAMMiB)/1024))
	}
	return strings.Join(parts, " · ")
}

func progressLine(in Input) string {
	p := in.Pending
	if p == nil {
		if in.UpdateLine != "" {
			return "Updating Strata: " + clipWords(in.UpdateLine, 80)
		}
		return ""
	}
	what := "Restarting Strata"
	switch p.Action {
	case "vision":
		what = "Switching vision to " + PlacementName(p.Placement, in.RemoteName)
	case "model":
		what = "Switching the model to " + p.Placement
	case "update":
		what = "Starting the updated Strata"
	case "repair":
		what = "Putting back what Strata's setup changed"
	case "unload":
		what = "Giving the GPU's memory back"
	}
	if p.Err != "" {
		return clipWords(what+" failed: "+p.Err, 100)
	}
	if in.State != nil {
		switch in.State.Server.Phase {
		case controlapi.PhaseStarting, controlapi.PhaseRestarting:
			d := in.State.Server.Detail
			if d == "" {
				d = "starting"
			}
			return what + ": " + d + "..."
		}
	}
	return what + "..."
}

// PlacementName is a placement in words, for menus and dialogs (the
// placements table's short name).
func PlacementName(p, remoteName string) string {
	return settings.Placement(p).ShortName(remoteName)
}

// BrowserURL is the server's root, from its API URL
// (http://127.0.0.1:8080/v1 -> http://127.0.0.1:8080/). "" when unknown.
func BrowserURL(st *controlapi.State) string {
	if st == nil {
		return ""
	}
	raw := st.Server.URL
	if raw == "" && st.Server.Port > 0 {
		raw = fmt.Sprintf("http://127.0.0.1:%d/", st.Server.Port)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	// A server listening on all interfaces is opened on this PC through loopback.
	switch u.Hostname() {
	case "0.0.0.0", "::":
		u.Host = strings.Replace(u.Host, u.Hostname(), "127.0.0.1", 1)
	}
	u.Path, u.RawQuery, u.Fragment = "/", "", ""
	return u.String()
}

// Duration is an uptime in words: "45 s", "12 min", "2 h 05 min", "3 d 4 h".
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %02d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d d %d h", int(d.Hours())/24, int(d.Hours())%24)
}

// NextChange is how long until the menu's time-dependent text can change
// for in at now, or 0 when nothing in it moves with time (no redraw needed).
// A starting server's "for 40 s" and a pending action move every few
// seconds (fast). Everything else is a time of day ("since 09:14", "last
// picture 10:02"), which moves only at midnight, when it gains its date.
// A valid pairing code goes when it expires.
func NextChange(in Input, now time.Time, fast time.Duration) time.Duration {
	d := nextChange(in, now, fast)
	if e := lendNextChange(in, now); e > 0 && (d == 0 || e < d) {
		d = e
	}
	return d
}

func nextChange(in Input, now time.Time, fast time.Duration) time.Duration {
	if in.Pending != nil {
		return fast
	}
	st := in.State
	if st == nil {
		return 0
	}
	switch st.Server.Phase {
	case controlapi.PhaseStarting, controlapi.PhaseRestarting:
		if !st.Server.Since.IsZero() {
			return fast
		}
	}
	return untilMidnight(now)
}

// untilMidnight is the time from now to the next midnight in now's zone.
func untilMidnight(now time.Time) time.Duration {
	y, m, d := now.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, now.Location()).Sub(now)
}

// Clock is a time of day in now's zone, with the date when not today.
func Clock(t, now time.Time) string {
	t = t.In(now.Location())
	y1, m1, d1 := t.Date()
	y2, m2, d2 := now.Date()
	if y1 == y2 && m1 == m2 && d1 == d2 {
		return t.Format("15:04")
	}
	return t.Format("Jan 2 15:04")
}
