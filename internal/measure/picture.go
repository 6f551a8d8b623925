package measure

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"sync"
)

// PictureSize is the standard trial picture's width and height: the size the
// reference figures are for (one 1024x1024 picture reaches the encoder's
// largest image-token count on a GPU, 1024, and its cap on a CPU, 300).
const PictureSize = 1024

var (
	pictureOnce sync.Once
	pictureData []byte
)

// StandardPicture is the trial picture: a 1024x1024 PNG made here (colour
// bands and a grid, so it compresses like a photo-ish screenshot rather
// than to nothing), the same bytes on every PC and every run.
func StandardPicture() []byte {
	pictureOnce.Do(func() {
		img := image.NewNRGBA(image.Rect(0, 0, PictureSize, PictureSize))
		for y := 0; y < PictureSize; y++ {
			for x := 0; x < PictureSize; x++ {
				c := color.NRGBA{R: uint8(x >> 2), G: uint8(y >> 2), B: uint8((x ^ y) & 0xff), A: 0xff}
				if x%128 == 0 || y%128 == 0 {
					c = color.NRGBA{A: 0xff}
				}
				img.SetNRGBA(x, y, c)
			}
		}
		var b bytes.Buffer
		_ = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img)
		pictureData = b.Bytes()
	})
	return pictureData
}
