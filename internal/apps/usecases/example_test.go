package usecases_test

import (
	"fmt"
	"log"

	"github.com/bas-platform/bas/internal/apps/usecases"
)

// The embedded catalog and its taxonomy are loaded and checked once; each
// entry carries its tags, a guide and, where one exists, its template.
func Example() {
	c, err := usecases.Load()
	if err != nil {
		log.Fatal(err)
	}
	e, _ := c.Get("supplier_onboarding")
	fmt.Println(e.Name)
	fmt.Println(e.Industries, e.Departments, e.Risk)
	fmt.Println(e.Chain)
	fmt.Println(*e.TemplateID)
	fmt.Println(c.Known("department:", "department:finance"), c.Known("department:", "finance"))
	// Output:
	// Onboard suppliers
	// [industry:all] [department:procurement department:finance] medium
	// [human_task validate route execute human_task]
	// onboard_supplier
	// true false
}
