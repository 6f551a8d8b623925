package pages

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
)

func (u *UI) welcomePage() fyne.CanvasObject {
	var text string
	if u.Flow.Configured() {
		in, cfg, _ := u.Flow.Find.Selected()
		text = fmt.Sprintf("Strata Companion already runs Strata from %s with %s.\n\n"+
			"Use Next to change where pictures are read; Back and Cancel leave everything as it is.", in.Root, filepath.Base(cfg))
	} else {
		text = "This sets up Strata Companion in a few steps:\n\n" +
			"  1. find your Strata install,\n" +
			"  2. look at this PC's graphics card, processor and memory,\n" +
			"  3. choose where pictures are read: this GPU, the CPU, a second PC, or not at all,\n" +
			"  4. review the exact change to Strata's config,\n" +
			"  5. install the Strata service and start Strata.\n\n" +
			"Nothing is changed until you press Apply on the Review page. Cancel closes setup at any time."
	}
	u.goAsync(func() { u.do(u.settled) })
	box := container.NewVBox(bold("Welcome to Strata Companion"), para(text))
	if r := u.roleChoice(); r != nil { // lend.go
		box.Add(r)
	}
	return container.NewVScroll(box)
}

func (u *UI) findPage() fyne.CanvasObject {
	b := newBar()
	list := container.NewVBox()
	configs := widget.NewSelect(nil, func(s string) {
		if err := u.Flow.Find.SelectConfig(s); err != nil {
			u.setHint(err.Error())
		}
		u.updateButtons()
	})
	problems := para("")
	problems.Importance = widget.WarningImportance
	path := widget.NewEntry()
	path.SetPlaceHolder("or type the Strata folder (the one holding " + strataDirs + ")")
	var rebuild func()
	radios := widget.NewRadioGroup(nil, nil)
	rebuild = func() {
		ins := u.Flow.Find.Installs()
		sel, cfg, ok := u.Flow.Find.Selected()
		var opts []string
		selected := ""
		for _, in := range ins {
			label := in.Root
			if len(in.Problems) > 0 {
				label += "  (cannot run yet)"
			}
			if ok && in.Root == sel.Root {
				selected = label
			}
			opts = append(opts, label)
		}
		radios.Options = opts
		radios.OnChanged = nil
		radios.Selected = selected
		radios.OnChanged = func(s string) {
			for i, o := range opts {
				if o == s {
					u.Flow.Find.SelectInstall(i)
				}
			}
			rebuild()
		}
		radios.Refresh()
		configs.Options = nil
		problems.SetText("")
		if ok {
			configs.Options = append(configs.Options, sel.Configs...)
			configs.OnChanged, configs.Selected = nil, cfg
			configs.OnChanged = func(s string) {
				if err := u.Flow.Find.SelectConfig(s); err != nil {
					u.setHint(err.Error())
				}
				u.updateButtons()
			}
			if cfg == "" && len(sel.Configs) > 1 {
				configs.PlaceHolder = "Several configs and no run script names one: choose"
			}
			if len(sel.Problems) > 0 {
				problems.SetText("This install cannot run yet: " + strings.Join(sel.Problems, "; "))
			}
		}
		configs.Refresh()
		u.updateButtons()
	}
	browse := func(dir string) {
		u.goAsync(func() {
			_, err := u.Flow.Find.Browse(u.ctx, dir)
			u.do(func() {
				if err != nil {
					u.setHint(err.Error())
				} else {
					u.setHint("")
				}
				rebuild()
			})
		})
	}
	path.OnSubmitted = browse
	useB := widget.NewButtonWithIcon("Use this folder", theme.ConfirmIcon(), func() { browse(path.Text) })
	// Browse... opens fyne's folder chooser; the chosen folder is checked
	// exactly as a typed one.
	browseB := widget.NewButtonWithIcon("Browse...", theme.FolderOpenIcon(), func() {
		d := dialog.NewFolderOpen(func(dir fyne.ListableURI, err error) {
			if err != nil {
				u.setHint("could not open the folder: " + err.Error())
				return
			}
			if dir == nil {
				return // the user closed the chooser
			}
			path.SetText(dir.Path())
			browse(dir.Path())
		}, u.Win)
		if home, err := os.UserHomeDir(); err == nil {
			if l, err := storage.ListerForURI(storage.NewFileURI(home)); err == nil {
				d.SetLocation(l)
			}
		}
		d.Show()
		d.Resize(fyne.NewSize(760, 520)) // after Show: the chooser is built there
	})
	list.Add(b.box)
	list.Add(bold("Strata installs on this PC"))
	list.Add(radios)
	list.Add(container.NewBorder(nil, nil, nil, container.NewHBox(useB, browseB), path))
	list.Add(problems)
	list.Add(bold("Config (the model Strata runs)"))
	list.Add(configs)
	if len(u.Flow.Find.Installs()) > 0 {
		b.done("")
		b.box.Hide()
		rebuild()
		u.goAsync(func() { u.do(u.settled) })
	} else {
		b.set(setupflow.Progress{Fraction: -1, Text: "Looking for Strata in the usual places..."})
		u.goAsync(func() {
			_, err := u.Flow.Find.Search(u.ctx)
			u.do(func() {
				if isCancel(err) {
					return
				}
				b.box.Hide()
				if err != nil {
					u.setHint(findHint(err))
				}
				rebuild()
				u.settled()
			})
		})
	}
	return container.NewVScroll(list)
}

func mib(v int) string {
	if v < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.1f GB", float64(v)/1024)
}

func (u *UI) thisPCPage() fyne.CanvasObject {
	b := newBar()
	facts := container.NewVBox()
	fill := func(m *setupflow.Machine) {
		facts.RemoveAll()
		if len(m.GPUs) == 0 {
			facts.Add(bold("No NVIDIA graphics card was found"))
		}
		for _, g := range m.GPUs {
			form := widget.NewForm(
				widget.NewFormItem("Video memory", widget.NewLabel(fmt.Sprintf("%s total, %s free", mib(g.TotalMiB), mib(g.FreeMiB)))))
			if g.Driver != "" { // not every probe can read it: no empty row
				form.Append("Driver", widget.NewLabel(g.Driver))
			}
			card := section(fmt.Sprintf("GPU %d: %s", g.Index, g.Name), form)
			facts.Add(card)
		}
		cpu := fmt.Sprintf("%s (%d cores, %d threads)", m.CPU, m.Cores, m.Threads)
		facts.Add(section("Processor and memory", widget.NewForm(
			widget.NewFormItem("CPU", widget.NewLabel(cpu)),
			widget.NewFormItem("Memory", widget.NewLabel(fmt.Sprintf("%s total, %s free", mib(m.RAMMiB), mib(m.FreeMiB)))),
		)))
		for _, w := range m.Warnings {
			l := para("! " + w)
			l.Importance = widget.WarningImportance
			facts.Add(l)
		}
	}
	if m := u.Flow.Choice.Machine(); m != nil {
		b.box.Hide()
		fill(m)
		u.goAsync(func() { u.do(u.settled) })
	} else {
		b.set(setupflow.Progress{Fraction: -1, Text: "Probing this PC..."})
		u.goAsync(func() {
			m, err := u.Flow.Choice.Probe(u.ctx, u.progressTo(b))
			u.do(func() {
				if isCancel(err) {
					return
				}
				b.box.Hide()
				if m != nil {
					fill(m)
				}
				u.updateButtons()
				u.settled()
			})
		})
	}
	return container.NewVScroll(container.NewVBox(b.box, facts))
}

func (u *UI) placementPage() fyne.CanvasObject {
	box := container.NewVBox()
	ts := &trialState{}
	var build func()
	build = func() {
		box.RemoveAll()
		rec := u.Flow.Choice.Recommendation()
		choice := u.Flow.Choice.Current()
		if best, why, _ := u.Flow.Measure.Advice(); why != "" {
			box.Add(section("From the figures measured here: "+labelFor(rec, best), para(why)))
		} else if rec.Reason != "" {
			r := section("Recommended: "+labelFor(rec, rec.Best), para(rec.Reason))
			box.Add(r)
		}
		var groups []*widget.RadioGroup
		for _, o := range rec.Options {
			o := o
			title := o.Label
			if rec.IsBest(o) {
				title += " (recommended)"
			}
			g := widget.NewRadioGroup([]string{title}, nil)
			if o.Placement == choice.Placement && sameDevice(o.Device, choice.Device) {
				g.Selected = title
			}
			if !o.Available {
				g.Disable()
			}
			groups = append(groups, g)
			g.OnChanged = func(s string) {
				if s == "" {
					return
				}
				for _, other := range groups {
					if other != g {
						other.OnChanged, other.Selected = nil, ""
						other.Refresh()
					}
				}
				if err := u.Flow.Choice.Choose(o.Placement, o.Device); err != nil {
					u.setHint(err.Error())
				} else {
					u.setHint("")
				}
				u.refresh()
			}
			// Short words here (time, VRAM); the estimate's long
			// explanation is behind "How this was estimated" below.
			under := container.NewVBox()
			if l := figuresLabel(o); l != nil {
				under.Add(l)
			}
			if !o.Available {
				n := para("Not possible here: " + o.Why)
				n.Importance = widget.LowImportance
				under.Add(n)
			} else if !o.Placement.ReadsPictures() && o.Note != "" {
				under.Add(para(o.Note))
			}
			under.Add(u.trialRow(o, ts, build))
			box.Add(container.NewVBox(g, indent(under)))
			box.Add(widget.NewSeparator())
		}
		box.Add(para(setupflow.TextWaits))
		if c := u.timesChart(rec); c != nil {
			box.Add(c)
		}
		if d := estimateDetails(rec); d != nil {
			box.Add(d)
		}
		u.updateButtons()
	}
	u.refresh = build
	if u.Flow.Choice.Machine() == nil { // opened here directly (tray, already configured)
		b := newBar()
		b.set(setupflow.Progress{Fraction: -1, Text: "Probing this PC for the estimates..."})
		box.Add(b.box)
		u.goAsync(func() {
			_, err := u.Flow.Choice.Probe(u.ctx, u.progressTo(b))
			u.do(func() {
				if isCancel(err) {
					return
				}
				build()
				u.settled()
			})
		})
	} else {
		build()
		u.goAsync(func() { u.do(u.settled) })
	}
	sc := container.NewVScroll(box)
	u.pics = picturesPage{ts: ts, rebuild: build, scroll: sc}
	return sc
}

func labelFor(rec setupflow.Recommendation, p settings.Placement) string {
	if o, ok := rec.Option(p); ok {
		return o.Label
	}
	return string(p)
}

func sameDevice(a, b *int) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// confirmHostKey shows the fingerprint and waits for the user's answer.
func (u *UI) ConfirmHostKey(ctx context.Context, k setupflow.HostKey) bool {
	ans := make(chan bool, 1)
	u.do(func() {
		msg := widget.NewLabel(fmt.Sprintf("This is the first connection to %s. Its host key is\n\n%s %s\n\n"+
			"Check it on that PC (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub, or on Windows\n"+
			"C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub) before you trust it.", k.Address, k.Type, k.Fingerprint))
		u.confirm("Trust this PC?", msg, "Trust", "Do not trust", func(ok bool) { ans <- ok })
		if u.onHostKeyShown != nil {
			u.onHostKeyShown()
		}
	})
	select {
	case ok := <-ans:
		return ok
	case <-ctx.Done():
		u.do(func() { u.AnswerModal(false) })
		return false
	}
}

func (u *UI) secondPCPage() fyne.CanvasObject {
	t := u.Flow.SecondPC.Target()
	addr := widget.NewSelectEntry(nil)
	var sugg []string
	users := map[string]string{}
	for _, s := range u.Flow.SecondPC.Suggestions() {
		label := s.Alias
		sugg = append(sugg, label)
		users[label] = s.User
	}
	addr.SetOptions(sugg)
	addr.SetPlaceHolder("name or address, e.g. 192.168.1.20 or a Host from " + sshConfigWords())
	addr.SetText(t.Address)
	user := widget.NewEntry()
	user.SetPlaceHolder("your user name on that PC")
	user.SetText(t.User)
	addr.OnChanged = func(s string) {
		if u, ok := users[s]; ok && u != "" && user.Text == "" {
			user.SetText(u)
		}
	}
	pass := widget.NewPasswordEntry()
	pass.SetPlaceHolder("used once, to install the companion's own key; never stored")
	auth := widget.NewRadioGroup([]string{"ssh agent or my keys", "Password"}, func(s string) {
		if s == "Password" {
			pass.Enable()
		} else {
			pass.Disable()
		}
	})
	auth.Horizontal = true
	auth.SetSelected("ssh agent or my keys")
	if t.Password != "" {
		auth.SetSelected("Password")
		pass.SetText(t.Password)
	}
	target := func() setupflow.RemoteTarget {
		rt := setupflow.RemoteTarget{Address: strings.TrimSpace(addr.Text), User: strings.TrimSpace(user.Text), UseAgent: auth.Selected != "Password"}
		if !rt.UseAgent {
			rt.Password = pass.Text
		}
		return rt
	}
	form := widget.NewForm(
		widget.NewFormItem("Address", addr),
		widget.NewFormItem("User", user),
		widget.NewFormItem("Sign in with", auth),
		widget.NewFormItem("Password", pass),
	)
	u.remoteW = remoteWidgets{addr: addr, user: user}
	probeBar, pairBar, prepBar := newBar(), newBar(), newBar()
	probeBar.box.Hide()
	pairBar.box.Hide()
	prepBar.box.Hide()
	results, results2 := widget.NewForm(), widget.NewForm()
	resultsCard := section(settings.UpperFirst(settings.PlacementRemote.Name("")), container.NewGridWithColumns(2, results, results2))
	resultsCard.Hide()
	showReport := func(r *setupflow.RemoteReport) {
		results.Items, results2.Items = nil, nil
		gpu := para(r.GPUName())
		results.Append("System", widget.NewLabel(r.OS+" / "+r.Arch))
		results.Append("GPU", gpu)
		results.Append("Free VRAM", widget.NewLabel(mib(r.FreeVRAMMiB())))
		results2.Append("Round trip", widget.NewLabel(fmt.Sprintf("%.1f ms", r.RTTms)))
		results2.Append("Throughput", widget.NewLabel(fmt.Sprintf("%.0f MB/s up, %.0f down", r.UpMBps, r.DownMBps)))
		var m *settings.Measurement
		if t := u.trial(settings.PlacementRemote); t != nil {
			m = &t.Measurement
		}
		if w := settings.ShownPicture(r.PictureSeconds, m).Words(); w != "" {
			results2.Append("One picture", widget.NewLabelWithStyle(strings.TrimSuffix(w, " per picture"), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		}
		results2.Refresh()
		for _, p := range r.Problems {
			l := para(p)
			l.Importance = widget.WarningImportance
			results.Append("Note", l)
		}
		results.Refresh()
		resultsCard.Show()
	}
	whenOff, wakeL := u.secondPCOptions()
	var probeB, pairB *widget.Button
	// A trial picture there, once it is paired and prepared.
	trialBox := container.NewVBox()
	trialTS := &trialState{}
	var trialRebuild func()
	trialRebuild = func() {
		trialBox.RemoveAll()
		if _, paired, prepared := u.Flow.SecondPC.State(); paired && prepared && u.Flow.Measure.Available() {
			o := setupflow.Option{Placement: settings.PlacementRemote, Available: true, Label: settings.UpperFirst(settings.PlacementRemote.Name(""))}
			box := container.NewVBox()
			if t := u.trial(settings.PlacementRemote); t != nil {
				o.Measured = &t.Measurement
				box.Add(figuresLabel(o))
			}
			box.Add(u.trialRow(o, trialTS, trialRebuild))
			trialBox.Add(section("A trial picture on that PC", box))
		}
		trialBox.Refresh()
	}
	state := func() {
		wakeL.SetText(u.Flow.SecondPC.Wake().Describe())
		trialRebuild()
		_, paired, prepared := u.Flow.SecondPC.State()
		busy := u.Flow.Busy() != ""
		if busy {
			probeB.Disable()
			pairB.Disable()
		} else {
			probeB.Enable()
			if u.Flow.SecondPC.Report() != nil {
				pairB.Enable()
			} else {
				pairB.Disable()
			}
		}
		switch {
		case paired && prepared:
			pairB.SetText("Paired and prepared")
			pairB.Disable()
		case paired:
			pairB.SetText("Prepare")
		default:
			pairB.SetText("Pair and prepare")
		}
		u.updateButtons()
	}
	probeB = widget.NewButtonWithIcon("Probe", theme.SearchIcon(), func() {
		u.Flow.SecondPC.SetTarget(target())
		probeBar.box.Show()
		probeBar.set(setupflow.Progress{Fraction: 0, Text: "Connecting..."})
		u.setHint("")
		u.goAsync(func() {
			u.do(state)
			r, err := u.Flow.SecondPC.Probe(u.ctx, u.progressTo(probeBar))
			u.do(func() {
				if err != nil {
					if !isCancel(err) {
						probeBar.done("Failed")
						u.setHint(err.Error())
					}
				} else {
					probeBar.done(fmt.Sprintf("Reached %s", r.Address))
					showReport(r)
				}
				state()
				u.settled()
			})
		})
	})
	pairB = widget.NewButtonWithIcon("Pair and prepare", theme.ConfirmIcon(), func() {
		u.Flow.SecondPC.SetTarget(target())
		u.setHint("")
		u.goAsync(func() {
			_, paired, _ := u.Flow.SecondPC.State()
			if !paired {
				u.do(func() { pairBar.box.Show(); pairBar.set(setupflow.Progress{Fraction: 0, Text: "Pairing..."}); state() })
				if _, err := u.Flow.SecondPC.Pair(u.ctx, u.progressTo(pairBar)); err != nil {
					u.do(func() {
						if !isCancel(err) {
							pairBar.done("Pairing failed")
							u.setHint(err.Error())
						}
						state()
					})
					return
				}
				u.do(func() { pairBar.done("Paired: the companion has its own key on that PC") })
			}
			u.do(func() {
				prepBar.box.Show()
				prepBar.set(setupflow.Progress{Fraction: 0, Text: "Preparing..."})
				state()
			})
			err := u.Flow.SecondPC.Prepare(u.ctx, u.progressTo(prepBar))
			u.do(func() {
				if err != nil {
					if !isCancel(err) {
						prepBar.done("Preparing failed")
						u.setHint(err.Error())
					}
				} else {
					prepBar.done("Prepared: the encoder started there and answered READY")
				}
				state()
				u.settled()
			})
		})
	})
	u.remoteW.probe, u.remoteW.pair = probeB, pairB
	// Enter in a field probes (the first time), then moves on.
	submit := func(string) {
		if u.Flow.SecondPC.Report() == nil && !probeB.Disabled() {
			probeB.OnTapped()
		} else if !u.next.Disabled() {
			u.Next()
		}
	}
	addr.OnSubmitted, user.OnSubmitted, pass.OnSubmitted = submit, submit, submit
	pairBar.text.SetText("")
	if r := u.Flow.SecondPC.Report(); r != nil {
		showReport(r)
	}
	_, paired, prepared := u.Flow.SecondPC.State()
	if paired && prepared && u.Flow.SecondPC.Report() == nil {
		u.setHint("This second PC is already paired and prepared. Probe it again to see fresh figures, or press Next.")
	}
	state()
	// First, the PCs that lend their GPU and their code (secondpc_code.go);
	// once paired that way, the probe and the prepare follow.
	byCode, searching := u.codeSection(func(r *settings.Remote) {
		t := u.Flow.SecondPC.Target()
		addr.SetText(t.Address)
		user.SetText(t.User)
		auth.SetSelected("ssh agent or my keys")
		u.probeThenPrepare(probeBar, prepBar, showReport, state)
	})
	if !searching {
		u.goAsync(func() { u.do(u.settled) })
	}
	intro := para("Pictures go to that PC over ssh and come back as the encoder's result (about 10 MB each). " + setupflow.TextWaits + " " +
		"The second PC needs an NVIDIA GPU with about 1.5 GB free and an ssh server.")
	top := []fyne.CanvasObject{intro}
	if byCode != nil {
		top = append(top, byCode, bold("Or sign in to that PC with ssh (your user name there, and your key or its password)"))
	}
	sc := container.NewVScroll(container.NewVBox(append(top, form,
		container.NewHBox(probeB, pairB), probeBar.box, resultsCard, pairBar.box, prepBar.box, trialBox, whenOff)...))
	u.remoteW.scroll = sc
	return sc
}

// secondPCOptions is the Second PC page's "when no pictures come, or that
// PC is off" section: the idle stop of its encoder, the CPU fallback, and
// whether the PC can be woken (the MAC pairing recorded). The choices live
// in the flow (setupflow.SecondPCOptions) and are written at Apply.
func (u *UI) secondPCOptions() (box fyne.CanvasObject, wake *widget.Label) {
	o := u.Flow.SecondPC.Options()
	idle := widget.NewEntry()
	idle.SetText(settings.FormatIdleStop(o.IdleStopS))
	idle.SetPlaceHolder("e.g. 10m, 600 (seconds) or off")
	idleNote := para("without a picture, to give that PC its VRAM back; off keeps it running. The first picture after a stop waits a few seconds for the encoder.")
	idle.OnChanged = func(s string) {
		secs, err := settings.ParseIdleStop(s)
		if err != nil {
			idleNote.Importance = widget.WarningImportance
			idleNote.SetText(err.Error() + "; kept: " + settings.FormatIdleStop(u.Flow.SecondPC.Options().IdleStopS))
			return
		}
		cur := u.Flow.SecondPC.Options()
		cur.IdleStopS = secs
		u.Flow.SecondPC.SetOptions(cur)
		idleNote.Importance = widget.MediumImportance
		idleNote.SetText("without a picture, to give that PC its VRAM back; off keeps it running. The first picture after a stop waits a few seconds for the encoder.")
	}
	fallback := widget.NewCheck("Read pictures on this PC's CPU when the second PC is off (slower; otherwise such a picture fails with the reason)", func(on bool) {
		cur := u.Flow.SecondPC.Options()
		cur.FallbackCPU = on
		u.Flow.SecondPC.SetOptions(cur)
	})
	fallback.SetChecked(o.FallbackCPU)
	u.remoteW.idle, u.remoteW.fallback = idle, fallback
	wake = para(u.Flow.SecondPC.Wake().Describe())
	form := widget.NewForm(
		widget.NewFormItem("Stop its encoder after", container.NewVBox(idle, idleNote)),
		widget.NewFormItem("Waking that PC", wake),
	)
	return section("When no pictures come, or that PC is off", container.NewVBox(form, fallback)), wake
}

// DiffColumns is how wide the Review page's diff is wrapped: it fits the
// window at 150 % on a 1280x800 screen.
const DiffColumns = 76

// WrapDiff breaks the lines of a unified diff longer than cols characters,
// after a comma or a space where it can. A continuation line keeps the
// line's marker (+, - or space) and is indented, so its colour and its
// meaning stay those of the line it continues.
func WrapDiff(diff string, cols int) string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		r := []rune(l)
		if len(r) <= cols || len(r) == 0 {
			out = append(out, l)
			continue
		}
		marker := string(r[0])
		if marker != "+" && marker != "-" {
			marker = " "
		}
		first := true
		for len(r) > 0 {
			width := cols
			if !first {
				width = cols - 5 // the marker and four spaces of indent
			}
			if len(r) <= width {
				out = append(out, cont(marker, first, string(r)))
				break
			}
			cut := width
			for i := width; i > width/2; i-- {
				if r[i-1] == ',' || r[i-1] == ' ' || r[i-1] == '\\' {
					cut = i
					break
				}
			}
			out = append(out, cont(marker, first, strings.TrimRight(string(r[:cut]), " ")))
			r = []rune(strings.TrimLeft(string(r[cut:]), " "))
			first = false
		}
	}
	return strings.Join(out, "\n")
}

func cont(marker string, first bool, s string) string {
	if first {
		return s
	}
	return marker + "    " + s
}

// diffGrid shows a unified diff with added lines green and removed red.
func diffGrid(diff string) *widget.TextGrid {
	g := widget.NewTextGrid()
	g.SetText(strings.TrimRight(diff, "\n"))
	// Darker green and red on a light background, lighter on a dark one:
	// the theme's own success colour is too pale to read as text on white.
	addC, delC := color.NRGBA{0x1a, 0x7f, 0x37, 0xff}, color.NRGBA{0xcf, 0x22, 0x2e, 0xff}
	if fyne.CurrentApp() != nil && fyne.CurrentApp().Settings().ThemeVariant() == theme.VariantDark {
		addC, delC = color.NRGBA{0x3f, 0xb9, 0x50, 0xff}, color.NRGBA{0xf8, 0x51, 0x49, 0xff}
	}
	add := &widget.CustomTextGridStyle{FGColor: addC}
	del := &widget.CustomTextGridStyle{FGColor: delC}
	hdr := &widget.CustomTextGridStyle{FGColor: theme.Color(theme.ColorNamePlaceHolder)}
	for i, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "@@"):
			g.SetRowStyle(i, hdr)
		case strings.HasPrefix(l, "+"):
			g.SetRowStyle(i, add)
		case strings.HasPrefix(l, "-"):
			g.SetRowStyle(i, del)
		}
	}
	return g
}

func (u *UI) reviewPage() fyne.CanvasObject {
	box := container.NewVBox()
	b := newBar()
	b.set(setupflow.Progress{Fraction: -1, Text: "Working out the exact change..."})
	box.Add(b.box)
	u.next.SetText("Apply")
	u.next.SetIcon(theme.ConfirmIcon())
	u.goAsync(func() {
		rv, err := u.Flow.Apply.PlanReview(u.ctx)
		u.do(func() {
			if isCancel(err) {
				return
			}
			box.RemoveAll()
			if err != nil {
				u.setHint(err.Error() + "\nGo Back and choose differently, or fix the config and come back.")
				u.updateButtons()
				u.settled()
				return
			}
			sum := bold(rv.Summary + ".")
			sum.Wrapping = fyne.TextWrapWord // the second PC's summary is long
			box.Add(sum)
			if rv.Diff == "" {
				box.Add(para(rv.ConfigPath + " already says this: it will not be changed."))
			} else {
				box.Add(para("This exact change will be made to " + rv.ConfigPath + " (a backup is kept):"))
				// Long lines (a config's args) are wrapped, not scrolled
				// sideways: the page scrolls up and down only, and the
				// mouse wheel over the diff scrolls the page.
				box.Add(diffGrid(WrapDiff(rv.Diff, DiffColumns)))
			}
			for _, n := range rv.Notes {
				box.Add(para("Note: " + n + "."))
			}
			box.Add(widget.NewSeparator())
			box.Add(bold("The service"))
			for _, l := range rv.Service {
				box.Add(para(l))
			}
			tray := widget.NewCheck("Start the tray icon when I log in", u.Flow.Apply.SetTrayAtLogin)
			tray.SetChecked(rv.TrayAtLogin)
			box.Add(tray)
			u.updateButtons()
			u.settled()
		})
	})
	return container.NewVScroll(box)
}

// logView is the live tail of Strata's output.
type logView struct {
	grid  *widget.TextGrid
	lines []string
	scr   *container.Scroll
}

func (l *logView) add(s string) {
	l.lines = append(l.lines, s)
	if len(l.lines) > 200 {
		l.lines = l.lines[len(l.lines)-200:]
	}
	l.grid.SetText(strings.Join(l.lines, "\n"))
	l.scr.ScrollToBottom()
}

func (u *UI) applyPage() fyne.CanvasObject {
	b := newBar()
	phase := bold("")
	lv := &logView{grid: widget.NewTextGrid()}
	lv.scr = container.NewScroll(lv.grid)
	lv.scr.SetMinSize(fyne.NewSize(600, 220))
	logTitle := bold("Strata's output")
	result := container.NewVBox()
	u.back.Disable()
	run := func() {
		result.RemoveAll()
		u.next.Disable()
		u.back.Disable()
		b.set(setupflow.Progress{Fraction: 0, Text: "Starting..."})
		u.goAsync(func() {
			err := u.Flow.Apply.Run(u.ctx, func(p setupflow.Progress) {
				u.do(func() {
					b.set(p)
					if p.Phase != "" {
						phase.SetText(phaseWords(p.Phase))
					}
					if p.LogLine != "" {
						lv.add(p.LogLine)
					}
				})
			})
			u.do(func() {
				if u.Flow.Cancelled() {
					return
				}
				if err != nil {
					b.box.Hide()
					result.Add(failureCard(err))
					if len(lv.lines) > 0 {
						result.Add(para("Go Back to Review to try again, or Cancel to close. The log above shows what Strata printed."))
					} else {
						logTitle.Hide()
						lv.scr.Hide()
						result.Add(para("Go Back to Review to try again, or Cancel to close. Strata was not started, so it printed nothing."))
					}
				} else {
					b.done("")
					phase.SetText("Strata is ready.")
					u.cancelB.Hide()
				}
				u.updateButtons()
				u.settled()
			})
		})
	}
	run()
	return container.NewBorder(container.NewVBox(b.box, phase, logTitle), result, nil, nil, lv.scr)
}

func (u *UI) donePage() fyne.CanvasObject {
	u.next.SetText("Finish")
	u.next.SetIcon(theme.ConfirmIcon())
	u.cancelB.Hide()
	u.back.Hide()
	_, lines := u.Flow.Apply.Applied()
	box := container.NewVBox(bold("Strata Companion is set up."))
	for _, l := range lines {
		box.Add(para(l))
	}
	box.Add(para("The service starts Strata when this PC starts. The tray icon shows what Strata is doing; " +
		"open this setup again from its menu (or the Start menu) to change where pictures are read."))
	u.goAsync(func() { u.do(u.settled) })
	return container.NewVScroll(box)
}

func phaseWords(p string) string {
	switch p {
	case "failed":
		return "Strata stopped while starting."
	case "ready":
		return "Strata is ready."
	}
	return "Strata is " + p + "..."
}

// failureCard says what failed and, one per line, what was put back.
func failureCard(err error) fyne.CanvasObject {
	head := widget.NewLabelWithStyle("Strata is not running with the new settings", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	head.Importance = widget.DangerImportance
	box := container.NewVBox(head)
	var ae *setupflow.ApplyError
	if errors.As(err, &ae) {
		box.Add(para(fmt.Sprintf("Could not %s: %s", ae.Step, guiWords(ae.Err))))
		if len(ae.RolledBack) > 0 {
			box.Add(bold("Put back as it was:"))
			for _, r := range ae.RolledBack {
				box.Add(para("•  " + r))
			}
		} else if ae.RollbackErr == nil {
			box.Add(para("Nothing was changed."))
		}
		if ae.RollbackErr != nil {
			l := para("Putting things back failed too: " + ae.RollbackErr.Error())
			l.Importance = widget.DangerImportance
			box.Add(l)
		}
	} else {
		box.Add(para(guiWords(err)))
	}
	return widget.NewCard("", "", box)
}
