package kube

import "strconv"

// Quantity is a resource.Quantity in its canonical string form, which is
// what it marshals to.
type Quantity string

// BinarySI is resource.NewQuantity(n, resource.BinarySI).String(): a
// multiple of a power of 1024 with its suffix (64Mi), else the decimal
// form below 1024 (and where 1024 does not divide n) as DecimalSI writes
// it (1k, 500).
func BinarySI(n int64) Quantity {
	if n > -1024 && n < 1024 {
		return decimalSI(n, 0)
	}
	amount, exp := removeFactors(n, 1024)
	return Quantity(strconv.FormatInt(amount, 10) + binarySuffixes[exp])
}

// MilliDecimalSI is resource.NewMilliQuantity(m, resource.DecimalSI).String():
// 1500m, 2, 1k.
func MilliDecimalSI(m int64) Quantity { return decimalSI(m, -3) }

var binarySuffixes = [...]string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// decimalSI is n·10^scale with the factors of 10 moved into an exponent
// that is a multiple of 3, and the exponent's SI suffix.
func decimalSI(n int64, scale int) Quantity {
	if n == 0 {
		return "0"
	}
	amount, times := removeFactors(n, 10)
	exp := scale + times
	// Go's % keeps the sign: -2 and 1 both want one more digit.
	switch exp % 3 {
	case 1, -2:
		amount *= 10
		exp--
	case 2, -1:
		amount *= 100
		exp -= 2
	}
	return Quantity(strconv.FormatInt(amount, 10) + decimalSuffix(exp))
}

func decimalSuffix(exp int) string {
	switch exp {
	case -9:
		return "n"
	case -6:
		return "u"
	case -3:
		return "m"
	case 0:
		return ""
	case 3:
		return "k"
	case 6:
		return "M"
	case 9:
		return "G"
	case 12:
		return "T"
	case 15:
		return "P"
	case 18:
		return "E"
	}
	// Unreachable for an int64 at scale 0 or -3 (|n| < 10^19).
	return "e" + strconv.Itoa(exp)
}

// removeFactors divides base out of |n| while it divides it, keeping the
// sign, as apimachinery's removeInt64Factors.
func removeFactors(n, base int64) (int64, int) {
	neg := n < 0
	if neg {
		n = -n // MinInt64 stays negative: no factor is removed, as upstream
	}
	times := 0
	for n >= base && n%base == 0 {
		n /= base
		times++
	}
	if neg {
		n = -n
	}
	return n, times
}
