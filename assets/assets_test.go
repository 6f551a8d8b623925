package assets

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/png"
	"testing"
)

var allNames = []string{"app", TrayReady, TrayBusy, TrayDegraded, TrayError, TrayOffline}

// Sizes each ICO must carry (gen/main.go's icoSizes): the Windows tray picks
// 16/20/24/32 by display scaling, Explorer and the installer the larger ones.
var wantICOSizes = []int{16, 20, 24, 32, 40, 48, 64, 256}

func TestPNGsDecode(t *testing.T) {
	for _, n := range allNames {
		img, err := png.Decode(bytes.NewReader(PNG(n)))
		if err != nil {
			t.Errorf("%s.png: %v", n, err)
			continue
		}
		b := img.Bounds()
		want := 64
		if n == "app" {
			want = 512
		}
		if b.Dx() != want || b.Dy() != want {
			t.Errorf("%s.png is %dx%d, want %dx%d", n, b.Dx(), b.Dy(), want, want)
		}
		checkNotPlaceholder(t, n+".png", img)
	}
}

func TestICOEntries(t *testing.T) {
	for _, n := range allNames {
		ico := ICO(n)
		le := binary.LittleEndian
		if len(ico) < 6 || le.Uint16(ico[0:]) != 0 || le.Uint16(ico[2:]) != 1 {
			t.Errorf("%s.ico: not an icon file (bad ICONDIR header)", n)
			continue
		}
		count := int(le.Uint16(ico[4:]))
		if count != len(wantICOSizes) {
			t.Errorf("%s.ico has %d images, want %d", n, count, len(wantICOSizes))
			continue
		}
		for i := 0; i < count; i++ {
			e := ico[6+16*i : 6+16*(i+1)]
			w, h := int(e[0]), int(e[1])
			if w == 0 {
				w = 256
			}
			if h == 0 {
				h = 256
			}
			size, off := int(le.Uint32(e[8:])), int(le.Uint32(e[12:]))
			if off+size > len(ico) {
				t.Errorf("%s.ico entry %d points past the end of the file", n, i)
				continue
			}
			if w != wantICOSizes[i] || h != wantICOSizes[i] {
				t.Errorf("%s.ico entry %d says %dx%d, want %d", n, i, w, h, wantICOSizes[i])
			}
			if bpp := le.Uint16(e[6:]); bpp != 32 {
				t.Errorf("%s.ico entry %d: %d bits per pixel, want 32", n, i, bpp)
			}
			img, err := png.Decode(bytes.NewReader(ico[off : off+size]))
			if err != nil {
				t.Errorf("%s.ico entry %d: %v", n, i, err)
				continue
			}
			if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
				t.Errorf("%s.ico entry %d: image is %dx%d but the directory says %dx%d", n, i, b.Dx(), b.Dy(), w, h)
			}
			checkNotPlaceholder(t, n+".ico", img)
		}
	}
}

// The tray states must be told apart: no two icons may be the same picture.
func TestIconsDiffer(t *testing.T) {
	seen := map[string]string{}
	for _, n := range allNames {
		k := string(PNG(n))
		if other, dup := seen[k]; dup {
			t.Errorf("%s.png is the same image as %s.png", n, other)
		}
		seen[k] = n
	}
}

// checkNotPlaceholder catches a one-colour square: a drawn icon has
// transparent corners (the rounded tile) and many colours (antialiasing).
func checkNotPlaceholder(t *testing.T, name string, img image.Image) {
	t.Helper()
	b := img.Bounds()
	if _, _, _, a := img.At(b.Min.X, b.Min.Y).RGBA(); a != 0 && b.Dx() > 24 {
		t.Errorf("%s (%dpx): top-left corner is not transparent", name, b.Dx())
	}
	colours := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colours) < 8 {
		t.Errorf("%s (%dpx): only %d colours, looks like a placeholder", name, b.Dx(), len(colours))
	}
}
