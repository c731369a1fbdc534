package templates_test

import (
	"fmt"
	"log"

	"github.com/bas-platform/bas/internal/apps/templates"
)

// The embedded catalog is loaded and checked once; each template is a
// chain of steps that installs as a process.
func Example() {
	c, err := templates.Load()
	if err != nil {
		log.Fatal(err)
	}
	t, _ := c.Get("onboard_supplier")
	fmt.Println(t.Name, "-", t.Function, "-", t.Status)
	fmt.Println(t.Chain())
	fmt.Println(t.Requires)
	in := t.ProcessIn()
	fmt.Println(in.TemplateID, len(in.Check()), "violations")
	// Output:
	// Onboard a supplier - procurement - available
	// [human_task validate route execute human_task]
	// [email.send]
	// onboard_supplier 0 violations
}
