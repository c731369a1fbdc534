package invoicing

import (
	"bytes"
	"context"
	"strings"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/go-pdf/fpdf"
)

// PDF renders an invoice as a PDF a customer could receive: the business
// and its support email, the number, dates, customer, lines with their
// taxes, the totals, the amount due and the payment link. It returns the
// file and its name ("INV-000001.pdf", or "draft-<id>.pdf").
func (s *Service) PDF(ctx context.Context, tenant, id string) ([]byte, string, error) {
	var r *record
	var a *Account
	var c *Customer
	err := s.st.View(ctx, func(rd store.Reader) error {
		var err error
		if r, err = invoices.Get(rd, tenant, id); err != nil {
			return err
		}
		if a, err = s.account(ctx, rd, tenant); err != nil {
			return err
		}
		c, err = customers.Get(rd, tenant, r.CustomerID)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	b, err := s.renderPDF(r, a, c)
	if err != nil {
		return nil, "", err
	}
	name := "draft-" + r.ID + ".pdf"
	if r.Number != nil {
		name = *r.Number + ".pdf"
	}
	return b, name, nil
}

func (s *Service) renderPDF(r *record, a *Account, c *Customer) ([]byte, error) {
	p := fpdf.New("P", "mm", "A4", "")
	p.SetTitle("Invoice", true)
	p.SetCreator("bas invoicing", true)
	p.SetAutoPageBreak(true, 20)
	p.SetMargins(18, 18, 18)
	tr := p.UnicodeTranslatorFromDescriptor("") // cp1252 for the core fonts
	txt := func(s string) string { return tr(s) }
	p.AliasNbPages("")
	p.SetFooterFunc(func() {
		p.SetY(-14)
		p.SetFont("Helvetica", "", 8)
		p.SetTextColor(110, 110, 110)
		p.CellFormat(0, 5, txt(a.BusinessName+" - page "+itoa(p.PageNo())+" of {nb}"), "", 0, "C", false, 0, "")
	})
	p.AddPage()
	width, _ := p.GetPageSize()
	content := width - 36

	title := "Invoice"
	if r.Number != nil {
		title = "Invoice " + *r.Number
	} else {
		title = "Draft invoice"
	}
	p.SetFont("Helvetica", "B", 18)
	p.CellFormat(content, 10, txt(title), "", 1, "L", false, 0, "")
	p.SetFont("Helvetica", "B", 11)
	p.CellFormat(content, 6, txt(a.BusinessName), "", 1, "L", false, 0, "")
	p.SetFont("Helvetica", "", 9)
	if a.SupportEmail != nil {
		p.CellFormat(content, 5, txt("Support: "+*a.SupportEmail), "", 1, "L", false, 0, "")
	}
	if a.Tax.TaxID != nil {
		p.CellFormat(content, 5, txt("Tax ID: "+*a.Tax.TaxID), "", 1, "L", false, 0, "")
	}
	p.Ln(4)

	// Bill to and dates, side by side.
	y := p.GetY()
	p.SetFont("Helvetica", "B", 9)
	p.CellFormat(content/2, 5, "Bill to", "", 1, "L", false, 0, "")
	p.SetFont("Helvetica", "", 9)
	billTo := []string{r.CustomerName}
	if r.CustomerEmail != nil {
		billTo = append(billTo, *r.CustomerEmail)
	}
	ad := c.Address
	for _, part := range []*string{ad.Line1, joinNonEmpty(", ", ad.City, ad.State, ad.PostalCode), ad.Country} {
		if part != nil && strings.TrimSpace(*part) != "" {
			billTo = append(billTo, *part)
		}
	}
	for _, l := range billTo {
		p.CellFormat(content/2, 5, txt(l), "", 1, "L", false, 0, "")
	}
	yLeft := p.GetY()
	p.SetXY(18+content/2, y)
	rows := [][2]string{{"Issued", r.CreatedAt.Format(dateLayout)}}
	if r.FinalizedAt != nil {
		rows[0][1] = r.FinalizedAt.Format(dateLayout)
	}
	if r.DueDate != nil {
		rows = append(rows, [2]string{"Due date", *r.DueDate})
	}
	rows = append(rows, [2]string{"Status", r.Status}, [2]string{"Currency", r.Currency})
	for _, row := range rows {
		p.SetX(18 + content/2)
		p.SetFont("Helvetica", "B", 9)
		p.CellFormat(content/4, 5, txt(row[0]), "", 0, "L", false, 0, "")
		p.SetFont("Helvetica", "", 9)
		p.CellFormat(content/4, 5, txt(row[1]), "", 1, "R", false, 0, "")
	}
	p.SetY(max(yLeft, p.GetY()) + 6)

	// Lines.
	cols := []float64{content - 100, 18, 30, 20, 32}
	head := []string{"Description", "Qty", "Unit price", "Tax", "Amount"}
	header := func() {
		p.SetFont("Helvetica", "B", 9)
		p.SetFillColor(235, 235, 235)
		for i, h := range head {
			align := "R"
			if i == 0 {
				align = "L"
			}
			p.CellFormat(cols[i], 7, h, "B", 0, align, true, 0, "")
		}
		p.Ln(-1)
		p.SetFont("Helvetica", "", 9)
	}
	header()
	const lh = 5.0
	for _, l := range r.Lines {
		desc := p.SplitLines([]byte(txt(l.Description)), cols[0]-2)
		h := lh * float64(max(len(desc), 1))
		if p.GetY()+h > 297-24 {
			p.AddPage()
			header()
		}
		x0, y0 := p.GetX(), p.GetY()
		for i, d := range desc {
			p.SetXY(x0, y0+float64(i)*lh)
			p.CellFormat(cols[0], lh, string(d), "", 0, "L", false, 0, "")
		}
		p.SetXY(x0+cols[0], y0)
		milli, _ := rateMilli(l.TaxRatePercent)
		cells := []string{itoa64(l.Quantity), formatAmount(r.Currency, l.UnitAmountCents), formatRate(milli),
			formatAmount(r.Currency, l.AmountCents)}
		for i, cell := range cells {
			p.CellFormat(cols[i+1], lh, txt(cell), "", 0, "R", false, 0, "")
		}
		p.SetXY(x0, y0+h)
		p.Line(x0, y0+h, x0+content, y0+h)
	}
	p.Ln(4)

	// Totals.
	totalsRows := [][2]string{{"Subtotal", formatAmount(r.Currency, r.SubtotalCents)}}
	for _, t := range taxSummary(r) {
		totalsRows = append(totalsRows, [2]string{"Tax " + t.rate, formatAmount(r.Currency, t.cents)})
	}
	totalsRows = append(totalsRows, [2]string{"Tax total", formatAmount(r.Currency, r.TaxCents)},
		[2]string{"Total", formatAmount(r.Currency, r.TotalCents)},
		[2]string{"Amount paid", formatAmount(r.Currency, r.AmountPaidCents)})
	for _, row := range totalsRows {
		p.SetX(18 + content - 90)
		p.SetFont("Helvetica", "", 9)
		p.CellFormat(50, 6, txt(row[0]), "", 0, "L", false, 0, "")
		p.CellFormat(40, 6, txt(row[1]), "", 1, "R", false, 0, "")
	}
	p.SetX(18 + content - 90)
	p.SetFont("Helvetica", "B", 11)
	p.CellFormat(50, 8, "Amount due", "T", 0, "L", false, 0, "")
	p.CellFormat(40, 8, txt(formatAmount(r.Currency, r.AmountDueCents)), "T", 1, "R", false, 0, "")
	p.Ln(6)

	p.SetFont("Helvetica", "", 9)
	if r.Memo != nil && strings.TrimSpace(*r.Memo) != "" {
		p.SetFont("Helvetica", "B", 9)
		p.CellFormat(content, 5, "Memo", "", 1, "L", false, 0, "")
		p.SetFont("Helvetica", "", 9)
		p.MultiCell(content, 5, txt(*r.Memo), "", "L", false)
		p.Ln(3)
	}
	if r.PaymentURL != nil && r.Status == StatusOpen {
		p.SetFont("Helvetica", "B", 9)
		p.CellFormat(content, 5, "Pay online", "", 1, "L", false, 0, "")
		p.SetFont("Helvetica", "", 9)
		p.SetTextColor(20, 60, 160)
		p.MultiCell(content, 5, txt(*r.PaymentURL), "", "L", false)
		p.SetTextColor(0, 0, 0)
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		return nil, errors.Wrap(err, "render the invoice PDF")
	}
	return buf.Bytes(), nil
}

type taxLine struct {
	rate  string
	cents int64
}

// taxSummary sums the tax per rate, in the order rates first appear.
func taxSummary(r *record) []taxLine {
	var out []taxLine
	idx := map[float64]int{}
	for _, l := range r.Lines {
		if l.TaxRatePercent == 0 {
			continue
		}
		i, ok := idx[l.TaxRatePercent]
		if !ok {
			milli, _ := rateMilli(l.TaxRatePercent)
			i = len(out)
			idx[l.TaxRatePercent] = i
			out = append(out, taxLine{rate: formatRate(milli)})
		}
		out[i].cents += l.TaxCents
	}
	return out
}

func joinNonEmpty(sep string, parts ...*string) *string {
	var xs []string
	for _, p := range parts {
		if p != nil && strings.TrimSpace(*p) != "" {
			xs = append(xs, *p)
		}
	}
	if len(xs) == 0 {
		return nil
	}
	s := strings.Join(xs, sep)
	return &s
}
