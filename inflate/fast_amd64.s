#include "textflag.h"

// func huffLoop(s *loopState) int
//
// huffFast's loop with every variable in a register (loopState documents
// the fields; their offsets are below):
//
//	SI  next input byte       R14  last input address to load 8 bytes from
//	R8  bit buffer            R9   bits in it (56..63 after a top-up)
//	DI  next output byte      R15  target less 1
//	R12 the higher of the lowest address a match may read from and the
//	    end of the window bytes being tracked: a match from below it
//	    fails or marks what it reads (lowsrc)
//	R10 pair table            R11  distance table
//	AX, BX, CX, DX, R13: scratch
//
// Symbols go through the pair table (see buildPairs): an entry holds one
// or two literals, or a length after a literal or none. The loop stops
// once fewer than 2 bytes are left before the target, so a pair's first
// literal never reaches the target: the stop is the Go loop's, symbol for
// symbol. Every symbol is decoded from 56 or more bits: a match takes at
// most 15+5+15+13 = 48 of them.

// TOPUP fills the bit buffer to 56 or more bits from the 8 bytes at SI.
// The bits below R9 do not change.
#define TOPUP \
	MOVQ (SI), DX \
	MOVQ R9, CX \
	SHLQ CX, DX \
	ORQ  DX, R8 \
	MOVL $63, DX \
	SUBL R9, DX \
	SHRL $3, DX \
	ADDQ DX, SI \
	ORQ  $56, R9

// LOOKUP loads into AX the pair table entry for the next bits.
#define LOOKUP \
	MOVL R8, AX \
	ANDL $0xfff, AX \
	MOVL (R10)(AX*4), AX

// CONSUME drops the entry e's n bits (its low 6 bits: x86 masks a 64-bit
// shift count to 6 bits) and leaves n in CX.
#define CONSUME(e) \
	MOVL e, CX \
	SHRQ CX, R8 \
	ANDL $63, CX \
	SUBQ CX, R9

// EXTRA adds to r the CX (at most 13) bits that follow and drops them;
// it clobbers r2.
#define EXTRA(r, r2) \
	MOVL $1, r2 \
	SHLQ CX, r2 \
	DECQ r2 \
	ANDQ R8, r2 \
	SHRQ CX, R8 \
	SUBQ CX, R9 \
	ADDQ r2, r

// EXTRABEFORE leaves in saved the extra bits of the entry in AX, taken
// from saved, the bits before CONSUME dropped CX bits: the entry's
// codeword, then exmask&(AX>>9) extra bits. It clobbers CX and DX.
#define EXTRABEFORE(saved, exmask) \
	MOVL AX, DX \
	SHRL $9, DX \
	ANDL $exmask, DX \
	SUBL DX, CX \
	SHRQ CX, saved \
	MOVL DX, CX \
	MOVL $1, DX \
	SHLQ CX, DX \
	DECQ DX \
	ANDQ DX, saved

// SUBENTRY replaces the link entry in AX by the entry it points to in the
// sub-tables at off(s), indexed by the bits after the first pbits; it
// clobbers CX, DX and r.
#define SUBENTRY(pbits, off, r) \
	MOVL AX, CX \
	MOVL $1, DX \
	SHLQ CX, DX \
	DECQ DX \
	MOVQ R8, r \
	SHRQ $pbits, r \
	ANDQ r, DX \
	SHRL $16, AX \
	ADDQ AX, DX \
	MOVQ s+0(FP), r \
	MOVQ off(r), r \
	MOVL (r)(DX*4), AX

TEXT ·huffLoop(SB), NOSPLIT, $0-16
	MOVQ s+0(FP), AX
	MOVQ 0(AX), SI
	MOVQ 8(AX), R14
	MOVQ 16(AX), R8
	MOVQ 24(AX), R9
	MOVQ 32(AX), DI
	MOVQ 40(AX), R15
	MOVQ 48(AX), R12
	MOVQ 88(AX), R10
	MOVQ 72(AX), R11
	CMPQ DI, R15
	JAE  stop

refill:
	CMPQ SI, R14
	JHI  stop
	TOPUP
	LOOKUP

decode:
	// AX is the entry of the next symbol.
	TESTL $0x1c0, AX
	JNZ   notlits

	// One or two literals: store two bytes, advance by the count. The
	// next entry is looked up before the top-up, from the 44 or more
	// bits left (a pair takes at most 12): the top-up only adds bits
	// above them.
	MOVL AX, DX
	SHRL $16, DX
	MOVW DX, (DI)
	CONSUME(AX)
	SHRL $12, AX
	ANDL $3, AX
	ADDQ AX, DI
	LOOKUP
	CMPQ DI, R15
	JAE  stop
	CMPQ SI, R14
	JHI  stop
	TOPUP
	JMP  decode

notlits:
	MOVL AX, BX
	ANDL $0x1c0, BX
	CMPL BX, $0x40
	JNE  other

	// A length, after a literal or none (with none, the byte stored is
	// scratch the match overwrites). BX = base + extra bits.
	// The entry's n counts the length's extra bits too: they are
	// dropped with the codewords, and taken from the bits before.
	MOVL AX, DX
	SHRL $16, DX
	MOVB DX, (DI)
	MOVQ R8, BX
	CONSUME(AX)
	MOVL AX, DX
	SHRL $12, DX
	ANDL $3, DX
	ADDQ DX, DI
	EXTRABEFORE(BX, 7)
	MOVL AX, DX
	SHRL $24, DX
	LEAQ 3(BX)(DX*1), BX
	JMP  dist

other:
	CMPL BX, $0xc0
	JNE  eob

	// A codeword over 12 bits: through the literal/length table
	// (entries as huffman.go describes them) and its link to a
	// sub-table.
	MOVQ s+0(FP), DX
	MOVQ 56(DX), BX
	MOVL R8, AX
	ANDL $0x3ff, AX
	MOVL (BX)(AX*4), AX
	SUBENTRY(10, 64, BX)
	MOVL AX, BX
	ANDL $0x1c0, BX
	JNE  subnotlit
	CONSUME(AX)
	SHRL $16, AX
	MOVB AX, (DI)
	INCQ DI
	CMPQ DI, R15
	JB   refill
	JMP  stop

subnotlit:
	CMPL BX, $0x40
	JNE  eob
	CONSUME(AX)
	MOVL AX, BX
	SHRL $16, BX
	MOVL AX, CX
	SHRL $9, CX
	ANDL $63, CX
	EXTRA(BX, DX)
	JMP  dist

eob:
	CMPL BX, $0x80
	JNE  badlit
	CONSUME(AX)
	MOVQ $1, AX
	JMP  exit

badlit:
	MOVQ $2, AX
	JMP  exit

dist:
	// DX = distance base + extra bits. The distance table's entries are
	// the Go loop's with n counting the extra bits too (see fastLoop);
	// its sub-tables' are not.
	MOVL R8, AX
	ANDL $0xff, AX
	MOVL (R11)(AX*4), AX
	MOVL AX, DX
	ANDL $0x1c0, DX
	CMPL DX, $0x40
	JNE  distsub
	MOVQ R8, R13
	CONSUME(AX)
	EXTRABEFORE(R13, 63)
	MOVL AX, DX
	SHRL $16, DX
	ADDQ R13, DX
	JMP  distance

distsub:
	CMPL DX, $0xc0
	JNE  baddist
	SUBENTRY(8, 80, CX)
	MOVL AX, DX
	ANDL $0x1c0, DX
	CMPL DX, $0x40
	JNE  baddist
	CONSUME(AX)
	MOVL AX, DX
	SHRL $16, DX
	MOVL AX, CX
	SHRL $9, CX
	ANDL $63, CX
	EXTRA(DX, R13)

distance:
	// R13 = the match's source.
	MOVQ DI, R13
	SUBQ DX, R13
	CMPQ R13, R12
	JB   lowsrc

copy:
	// The copy, as copyMatch does it: stores run up to 15 bytes past
	// the match, into the caller's slack. Most matches take two 8-byte
	// copies behind one branch: those of up to 16 bytes from 8 or more
	// back (the second copy reads what the first wrote), and those
	// closer but no longer than their distance (they read only bytes
	// before DI; what the copies write past the match is scratch).
	MOVQ    $16, CX
	CMPQ    DX, $8
	CMOVQCS DX, CX
	CMPQ    BX, CX
	JHI     slowcopy
	MOVQ    (R13), AX
	MOVQ    AX, (DI)
	MOVQ    8(R13), CX
	MOVQ    CX, 8(DI)
	ADDQ    BX, DI
	CMPQ    DI, R15
	JB      refill
	JMP     stop

slowcopy:
	CMPQ DX, $8
	JB   overlap
	// From 8 or more back, each chunk reads only bytes already final.
	LEAQ (DI)(BX*1), CX
	CMPQ DX, $16
	JB   long8

long16:
	MOVOU (R13), X0
	MOVOU X0, (DI)
	ADDQ  $16, R13
	ADDQ  $16, DI
	CMPQ  DI, CX
	JB    long16
	MOVQ  CX, DI
	JMP   next

long8:
	MOVQ (R13), AX
	MOVQ AX, (DI)
	ADDQ $8, R13
	ADDQ $8, DI
	CMPQ DI, CX
	JB   long8
	MOVQ CX, DI
	JMP  next

overlap:
	CMPQ DX, $1
	JEQ  run
	// Copy dist bytes at a time until 8 or more are written (CX = k),
	// then 8 at a time from k back.
	XORL CX, CX

over1:
	MOVQ (R13)(CX*1), AX
	MOVQ AX, (DI)(CX*1)
	ADDQ DX, CX
	CMPQ CX, $8
	JAE  over2
	CMPQ CX, BX
	JB   over1

over2:
	LEAQ (DI)(BX*1), DX
	MOVQ DI, R13
	ADDQ CX, DI

over3:
	CMPQ DI, DX
	JAE  over4
	MOVQ (R13), AX
	MOVQ AX, (DI)
	ADDQ $8, R13
	ADDQ $8, DI
	JMP  over3

over4:
	MOVQ DX, DI
	JMP  next

run:
	// Distance 1: the byte repeated.
	MOVBQZX (R13), AX
	MOVQ    $0x0101010101010101, CX
	IMULQ   CX, AX
	LEAQ    (DI)(BX*1), DX

run1:
	MOVQ AX, (DI)
	ADDQ $8, DI
	CMPQ DI, DX
	JB   run1
	MOVQ DX, DI

next:
	CMPQ DI, R15
	JB   refill

stop:
	XORL AX, AX

exit:
	MOVQ s+0(FP), CX
	MOVQ SI, 0(CX)
	MOVQ R8, 16(CX)
	MOVQ R9, 24(CX)
	MOVQ DI, 32(CX)
	MOVQ AX, ret+8(FP)
	RET

baddist:
	MOVQ $3, AX
	JMP  exit

toofar:
	MOVQ $4, AX
	JMP  exit

lowsrc:
	// A match from below R12: too far back, or reading tracked window
	// bytes, which it marks in touched: [R13, min(R13+BX, trackEnd)).
	MOVQ    s+0(FP), CX
	CMPQ    R13, 96(CX)
	JB      toofar
	MOVQ    104(CX), AX
	LEAQ    (R13)(BX*1), DX
	CMPQ    DX, AX
	CMOVQHI AX, DX
	MOVQ    112(CX), AX
	MOVQ    R13, CX

mark:
	MOVB $1, (CX)(AX*1)
	INCQ CX
	CMPQ CX, DX
	JB   mark
	MOVQ DI, DX
	SUBQ R13, DX
	JMP  copy
