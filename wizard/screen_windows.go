package main

import (
	"os"
	"strconv"
	"unsafe"

	"fyne.io/fyne/v2"
	"golang.org/x/sys/windows"
)

var (
	user32               = windows.NewLazySystemDLL("user32.dll")
	systemParametersInfo = user32.NewProc("SystemParametersInfoW")
	getDpiForSystem      = user32.NewProc("GetDpiForSystem")
)

// workArea is the primary screen less the taskbar, in pixels
// (SystemParametersInfo SPI_GETWORKAREA); zero when it cannot be read.
func workArea() fyne.Size {
	const spiGetWorkArea = 0x0030
	var r struct{ Left, Top, Right, Bottom int32 }
	if ok, _, _ := systemParametersInfo.Call(spiGetWorkArea, 0, uintptr(unsafe.Pointer(&r)), 0); ok == 0 {
		return fyne.Size{}
	}
	return fyne.NewSize(float32(r.Right-r.Left), float32(r.Bottom-r.Top))
}

// scale is what fyne draws at on Windows: the display's scale (96 dpi is
// 100 %, 144 is 150 %) times FYNE_SCALE.
func scale() float32 {
	s := float32(1)
	if getDpiForSystem.Find() == nil {
		if dpi, _, _ := getDpiForSystem.Call(); dpi > 0 {
			s = float32(dpi) / 96
		}
	}
	if v, err := strconv.ParseFloat(os.Getenv("FYNE_SCALE"), 32); err == nil && v > 0 {
		s *= float32(v)
	}
	return s
}
