package relay

import (
	"os"
	"sort"
	"time"

	"github.com/strata-companion/companion/internal/framing/bounds"
)

// pictureTimes keeps what the last pictures took, for their bound.
// They are the picture's (the router's, one picture at a time): no lock.
type pictureTimes struct {
	walls []time.Duration
	rates []float64 // bytes per second, wall time included (a lower bound of the link)
}

const keepTimes = 16

func (p *pictureTimes) add(d time.Duration, bytes int) {
	p.walls = append(p.walls, d)
	if len(p.walls) > keepTimes {
		p.walls = p.walls[1:]
	}
	if bytes > 0 && d > 0 {
		p.rates = append(p.rates, float64(bytes)/d.Seconds())
		if len(p.rates) > keepTimes {
			p.rates = p.rates[1:]
		}
	}
}

func median[T time.Duration | float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := append([]T(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func (p *pictureTimes) count() int {
	return len(p.walls)
}

func (p *pictureTimes) median() time.Duration {
	return median(p.walls)
}

// Bound parameters (bounds.PictureFactor...): a picture may take
// boundFactor times the recent median, plus transferFactor times its
// transfer at the measured rate, and never less than boundFloor (a GPU
// encoder's wake after an idle stop fits in it).
const (
	boundFactor    = bounds.PictureFactor
	transferFactor = bounds.PictureTransferFactor
	boundFloor     = bounds.PictureFloor
	minSamples     = bounds.TimedPictures
)

// bound is how long a picture of size bytes may take: first until
// minSamples pictures were timed, then from what they took.
func (p *pictureTimes) bound(size int, first time.Duration) time.Duration {
	if len(p.walls) < minSamples {
		return first
	}
	b := boundFactor * median(p.walls)
	if rate := median(p.rates); rate > 0 && size > 0 {
		b += transferFactor * time.Duration(float64(size)/rate*float64(time.Second))
	}
	return max(b, boundFloor)
}

func fileSize(path string) int64 {
	if fi, err := os.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}
