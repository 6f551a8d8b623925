// Command gen draws the companion's app icon and tray icons and writes them
// into assets/ as PNG and as Windows ICO files (go run ./assets/gen from the
// module root, or pass the output folder as the only argument).
//
// Everything is drawn from geometry, per output size, with signed distance
// functions: each pixel's coverage comes from its distance to a shape's edge,
// which gives clean antialiasing without supersampling and lets every size
// (16 px tray to 512 px app icon) be rendered directly instead of scaled down.
// Small sizes get slightly bolder geometry so the mark and the state badge
// stay readable in a 16 px notification area.
//
// The mark: a rounded square in deep indigo holding three stacked layers
// (strata), lightest on top. Tray icons add a state badge in the lower right
// corner, cut out of the icon by a transparent ring so it reads on any
// taskbar colour.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
)

// icoSizes are the images each .ico carries. 20 and 40 are the tray's sizes
// at 125% and 250% display scaling (Windows picks the nearest, and scaling 24
// down to 20 blurs the badge).
var icoSizes = []int{16, 20, 24, 32, 40, 48, 64, 256}

const (
	appPNGSize  = 512 // FyneApp.toml's icon; fyne packages it for every OS
	trayPNGSize = 64  // Linux/macOS trays scale this down themselves
)

// icon names, as assets.go knows them.
var icons = []struct {
	name  string
	state state
}{
	{"app", stateNone},
	{"tray-ready", stateReady},
	{"tray-busy", stateBusy},
	{"tray-degraded", stateDegraded},
	{"tray-error", stateError},
	{"tray-offline", stateOffline},
}

func main() {
	out := "assets"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	if _, err := os.Stat(filepath.Join(out, "assets.go")); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %s does not look like the assets folder (no assets.go): run from the module root or pass the folder\n", out)
		os.Exit(2)
	}
	for _, ic := range icons {
		pngSize := trayPNGSize
		if ic.state == stateNone {
			pngSize = appPNGSize
		}
		p, err := encodePNG(render(pngSize, ic.state))
		if err != nil {
			fail(err)
		}
		if err := writeFile(filepath.Join(out, ic.name+".png"), p); err != nil {
			fail(err)
		}
		var imgs [][]byte
		for _, s := range icoSizes {
			b, err := encodePNG(render(s, ic.state))
			if err != nil {
				fail(err)
			}
			imgs = append(imgs, b)
		}
		ico, err := encodeICO(icoSizes, imgs)
		if err != nil {
			fail(err)
		}
		if err := writeFile(filepath.Join(out, ic.name+".ico"), ico); err != nil {
			fail(err)
		}
		fmt.Printf("%-14s png %dpx, ico %v\n", ic.name, pngSize, icoSizes)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}

// writeFile replaces path through a temporary file, so an interrupted run
// never leaves a half-written icon behind (the files are embedded).
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func encodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeICO writes an ICO file whose images are PNG streams (supported by
// Windows since Vista; the layout is ICONDIR, one ICONDIRENTRY per image,
// then the images).
func encodeICO(sizes []int, pngs [][]byte) ([]byte, error) {
	if len(sizes) != len(pngs) {
		return nil, fmt.Errorf("ico: %d sizes for %d images", len(sizes), len(pngs))
	}
	var buf bytes.Buffer
	le := binary.LittleEndian
	hdr := make([]byte, 6)
	le.PutUint16(hdr[2:], 1) // type: icon
	le.PutUint16(hdr[4:], uint16(len(pngs)))
	buf.Write(hdr)
	offset := 6 + 16*len(pngs)
	for i, s := range sizes {
		if s < 1 || s > 256 {
			return nil, fmt.Errorf("ico: size %d out of range", s)
		}
		e := make([]byte, 16)
		dim := byte(s)
		if s == 256 {
			dim = 0 // 0 means 256
		}
		e[0], e[1] = dim, dim
		le.PutUint16(e[4:], 1)  // planes
		le.PutUint16(e[6:], 32) // bits per pixel
		le.PutUint32(e[8:], uint32(len(pngs[i])))
		le.PutUint32(e[12:], uint32(offset))
		buf.Write(e)
		offset += len(pngs[i])
	}
	for _, p := range pngs {
		buf.Write(p)
	}
	return buf.Bytes(), nil
}

// ---- drawing ----

type state int

const (
	stateNone state = iota // the app icon: no badge
	stateReady
	stateBusy
	stateDegraded
	stateError
	stateOffline
)

// rgba is a straight (not premultiplied) colour with components in 0..1.
type rgba struct{ r, g, b, a float64 }

func hex(v uint32) rgba {
	return rgba{float64(v>>16&0xff) / 255, float64(v>>8&0xff) / 255, float64(v&0xff) / 255, 1}
}

// The palette: indigo ground, three layers from pale aqua to teal.
var (
	bgTop    = hex(0x2B3A86)
	bgBottom = hex(0x141B45)
	layer1   = hex(0x9EF0E1) // top layer
	layer2   = hex(0x3CCFC0)
	layer3   = hex(0x1C9AA6)
	white    = hex(0xFFFFFF)

	green     = hex(0x22C55E)
	amber     = hex(0xF59E0B)
	yellow    = hex(0xFACC15)
	red       = hex(0xEF4444)
	slate     = hex(0x3F4654)
	darkGlyph = hex(0x1F2937)
)

// canvas is a premultiplied float RGBA buffer of n x n pixels.
type canvas struct {
	n   int
	pix []float64
}

func newCanvas(n int) *canvas { return &canvas{n: n, pix: make([]float64, 4*n*n)} }

// sdf is a signed distance in icon units (the icon spans 0..1): negative
// inside the shape.
type sdf func(x, y float64) float64

// coverage turns a distance into how much of a pixel the shape covers: a
// one-pixel-wide ramp centred on the edge.
func (c *canvas) coverage(d float64) float64 {
	v := 0.5 - d*float64(c.n)
	return math.Max(0, math.Min(1, v))
}

// fill paints shape with colour col (a function of position, for gradients)
// using source-over.
func (c *canvas) fill(shape sdf, col func(x, y float64) rgba) {
	n := float64(c.n)
	for py := 0; py < c.n; py++ {
		for px := 0; px < c.n; px++ {
			x, y := (float64(px)+0.5)/n, (float64(py)+0.5)/n
			cov := c.coverage(shape(x, y))
			if cov == 0 {
				continue
			}
			k := col(x, y)
			a := k.a * cov
			i := 4 * (py*c.n + px)
			c.pix[i] = k.r*a + c.pix[i]*(1-a)
			c.pix[i+1] = k.g*a + c.pix[i+1]*(1-a)
			c.pix[i+2] = k.b*a + c.pix[i+2]*(1-a)
			c.pix[i+3] = a + c.pix[i+3]*(1-a)
		}
	}
}

// erase cuts shape out of what is drawn (destination-out).
func (c *canvas) erase(shape sdf) {
	n := float64(c.n)
	for py := 0; py < c.n; py++ {
		for px := 0; px < c.n; px++ {
			x, y := (float64(px)+0.5)/n, (float64(py)+0.5)/n
			cov := c.coverage(shape(x, y))
			if cov == 0 {
				continue
			}
			i := 4 * (py*c.n + px)
			for k := 0; k < 4; k++ {
				c.pix[i+k] *= 1 - cov
			}
		}
	}
}

// desaturate turns the canvas to greys, lightened toward a mid grey so an
// offline icon reads as "off" rather than as a dark blot.
func (c *canvas) desaturate() {
	for i := 0; i < len(c.pix); i += 4 {
		a := c.pix[i+3]
		if a == 0 {
			continue
		}
		r, g, b := c.pix[i]/a, c.pix[i+1]/a, c.pix[i+2]/a
		l := 0.2126*r + 0.7152*g + 0.0722*b
		l = 0.42 + 0.5*l
		c.pix[i], c.pix[i+1], c.pix[i+2] = l*a, l*a, l*a
	}
}

func (c *canvas) image() *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, c.n, c.n))
	for i := 0; i < len(c.pix); i += 4 {
		a := c.pix[i+3]
		if a <= 0 {
			continue
		}
		img.Pix[i] = to8(c.pix[i] / a)
		img.Pix[i+1] = to8(c.pix[i+1] / a)
		img.Pix[i+2] = to8(c.pix[i+2] / a)
		img.Pix[i+3] = to8(a)
	}
	return img
}

func to8(v float64) uint8 { return uint8(math.Round(math.Max(0, math.Min(1, v)) * 255)) }

func solid(k rgba) func(x, y float64) rgba { return func(float64, float64) rgba { return k } }

// ---- shapes ----

func roundRect(x0, y0, x1, y1, r float64) sdf {
	cx, cy := (x0+x1)/2, (y0+y1)/2
	hx, hy := (x1-x0)/2-r, (y1-y0)/2-r
	return func(x, y float64) float64 {
		dx, dy := math.Abs(x-cx)-hx, math.Abs(y-cy)-hy
		out := math.Hypot(math.Max(dx, 0), math.Max(dy, 0))
		return out + math.Min(math.Max(dx, dy), 0) - r
	}
}

func circle(cx, cy, r float64) sdf {
	return func(x, y float64) float64 { return math.Hypot(x-cx, y-cy) - r }
}

// segment is a line from a to b with round caps, w wide.
func segment(ax, ay, bx, by, w float64) sdf {
	return func(x, y float64) float64 {
		px, py := x-ax, y-ay
		vx, vy := bx-ax, by-ay
		h := math.Max(0, math.Min(1, (px*vx+py*vy)/(vx*vx+vy*vy)))
		return math.Hypot(px-vx*h, py-vy*h) - w/2
	}
}

// arc is a ring of radius r and width w from angle a0 to a1 (radians,
// clockwise on screen from 3 o'clock), with round caps.
func arc(cx, cy, r, w, a0, a1 float64) sdf {
	ring := func(x, y float64) float64 { return math.Abs(math.Hypot(x-cx, y-cy)-r) - w/2 }
	e0x, e0y := cx+r*math.Cos(a0), cy+r*math.Sin(a0)
	e1x, e1y := cx+r*math.Cos(a1), cy+r*math.Sin(a1)
	return func(x, y float64) float64 {
		a := math.Atan2(y-cy, x-cx)
		for a < a0 {
			a += 2 * math.Pi
		}
		if a <= a1 {
			return ring(x, y)
		}
		return math.Min(math.Hypot(x-e0x, y-e0y), math.Hypot(x-e1x, y-e1y)) - w/2
	}
}

// polygon is the signed distance to a closed polygon (even-odd inside test).
func polygon(pts ...[2]float64) sdf {
	return func(x, y float64) float64 {
		d := math.Inf(1)
		inside := false
		for i, j := 0, len(pts)-1; i < len(pts); j, i = i, i+1 {
			ax, ay := pts[j][0], pts[j][1]
			bx, by := pts[i][0], pts[i][1]
			ex, ey := bx-ax, by-ay
			wx, wy := x-ax, y-ay
			h := math.Max(0, math.Min(1, (wx*ex+wy*ey)/(ex*ex+ey*ey)))
			d = math.Min(d, math.Hypot(wx-ex*h, wy-ey*h))
			if (ay > y) != (by > y) && x < ax+(y-ay)*ex/ey {
				inside = !inside
			}
		}
		if inside {
			return -d
		}
		return d
	}
}

// rounded grows a shape by r, rounding its corners.
func rounded(s sdf, r float64) sdf { return func(x, y float64) float64 { return s(x, y) - r } }

func union(a, b sdf) sdf { return func(x, y float64) float64 { return math.Min(a(x, y), b(x, y)) } }

// ---- the icon ----

// render draws one icon at n x n pixels.
func render(n int, st state) *image.NRGBA {
	small := n <= 24
	c := newCanvas(n)

	// The tile: a rounded square. Large icons keep a margin (Windows and
	// fyne icons are not drawn edge to edge); tray-sized ones use the
	// whole square, since every pixel counts.
	inset := 0.055
	radius := 0.22
	if small {
		inset, radius = 0.0, 0.2
	} else if n <= 48 {
		inset = 0.03
	}
	tile := roundRect(inset, inset, 1-inset, 1-inset, radius)
	c.fill(tile, func(x, y float64) rgba {
		t := (y - inset) / (1 - 2*inset)
		return lerp(bgTop, bgBottom, math.Max(0, math.Min(1, t)))
	})

	// The mark: three stacked flat diamonds, each lower one showing only as
	// a chevron below the one above. With a badge the mark moves up and
	// left a little to make room.
	cx, cy := 0.5, 0.5
	halfW, halfH, step := 0.30, 0.15, 0.14
	gap := 0.045
	if small {
		halfW, halfH, step, gap = 0.36, 0.18, 0.17, 0.07
	}
	if st != stateNone {
		cx, cy = 0.44, 0.44
		if small {
			cx, cy = 0.44, 0.42
		}
	}
	corner := 0.02
	if small {
		corner = 0.01
	}
	diamond := func(y float64) sdf {
		return rounded(polygon(
			[2]float64{cx, y - halfH + corner}, [2]float64{cx + halfW - corner, y},
			[2]float64{cx, y + halfH - corner}, [2]float64{cx - halfW + corner, y},
		), corner)
	}
	ys := []float64{cy - step, cy, cy + step}
	cols := []rgba{layer1, layer2, layer3}
	mark := newCanvas(n)
	for i := len(ys) - 1; i >= 0; i-- {
		if i < len(ys)-1 {
			mark.erase(rounded(diamond(ys[i]), gap))
		}
		mark.fill(diamond(ys[i]), solid(cols[i]))
	}
	// A soft highlight along the top layer's upper edges gives it depth
	// on large icons; at tray sizes it would only blur.
	if !small {
		top := diamond(ys[0])
		mark.fill(func(x, y float64) float64 { return math.Max(top(x, y), -top(x, y)-0.012) },
			func(x, y float64) rgba {
				k := white
				if y > ys[0] {
					k.a = 0
				} else {
					k.a = 0.45
				}
				return k
			})
	}
	c.over(mark)

	if st == stateOffline {
		c.desaturate()
	}
	if st != stateNone {
		drawBadge(c, st, small)
	}
	return c.image()
}

// over composites o onto c (source-over).
func (c *canvas) over(o *canvas) {
	for i := 0; i < len(c.pix); i += 4 {
		a := o.pix[i+3]
		for k := 0; k < 4; k++ {
			c.pix[i+k] = o.pix[i+k] + c.pix[i+k]*(1-a)
		}
	}
}

// drawBadge puts the state badge in the lower right corner, cut out of the
// tile by a transparent ring.
func drawBadge(c *canvas, st state, small bool) {
	bx, by, br := 0.74, 0.74, 0.22
	ring := 0.06
	if small {
		bx, by, br, ring = 0.72, 0.72, 0.28, 0.07
	}
	if c.n >= 256 {
		ring = 0.045
	}
	var shape sdf
	var col rgba
	switch st {
	case stateDegraded:
		// A warning triangle, slightly larger than the dots so its area
		// matches.
		h := br * 1.95
		tri := polygon(
			[2]float64{bx, by - h*0.58}, [2]float64{bx + h*0.58, by + h*0.42}, [2]float64{bx - h*0.58, by + h*0.42},
		)
		shape = rounded(tri, br*0.12)
		col = yellow
	default:
		shape = circle(bx, by, br)
		switch st {
		case stateReady:
			col = green
		case stateBusy:
			col = amber
		case stateError:
			col = red
		case stateOffline:
			col = slate
		}
	}
	c.erase(rounded(shape, ring))
	c.fill(shape, solid(col))

	// The glyph on the badge. Line widths have a one-pixel floor so they
	// survive 16 px.
	px := 1 / float64(c.n)
	lw := math.Max(br*0.26, 1.25*px)
	switch st {
	case stateReady:
		if !small {
			// A check mark on large sizes; at 16 px the green dot says it.
			c.fill(union(
				segment(bx-br*0.45, by+br*0.02, bx-br*0.12, by+br*0.36, lw),
				segment(bx-br*0.12, by+br*0.36, bx+br*0.48, by-br*0.32, lw),
			), solid(white))
		}
	case stateBusy:
		// A spinner arc, three quarters of a turn.
		r := br * 0.52
		c.fill(arc(bx, by, r, lw, -math.Pi/2, math.Pi), solid(white))
	case stateDegraded:
		// "!" in dark ink on yellow (white on yellow does not read).
		h := br * 1.95
		top, bot := by-h*0.22, by+h*0.12
		w := math.Max(br*0.24, 1.2*px)
		c.fill(segment(bx, top, bx, bot, w), solid(darkGlyph))
		c.fill(circle(bx, by+h*0.30, math.Max(w*0.62, 0.6*px)), solid(darkGlyph))
	case stateError:
		d := br * 0.42
		c.fill(union(
			segment(bx-d, by-d, bx+d, by+d, lw),
			segment(bx-d, by+d, bx+d, by-d, lw),
		), solid(white))
	case stateOffline:
		d := br * 0.48
		c.fill(segment(bx-d, by, bx+d, by, lw), solid(white))
	}
}

func lerp(a, b rgba, t float64) rgba {
	return rgba{a.r + (b.r-a.r)*t, a.g + (b.g-a.g)*t, a.b + (b.b-a.b)*t, a.a + (b.a-a.a)*t}
}
