//go:build !amd64

package inflate

const haveFastLoop = false

func huffLoop(s *loopState) int { panic("inflate: no assembly decoding loop on this architecture") }
