package httpapi_test
import ("testing";"strings";"fmt")
func TestZZDebug(t *testing.T){
	s := newProcessServer(t)
	owner := s.devLogin(t, `{"tenant_id": "ten_4e", "user_id": "owner"}`).Token
	second := s.devLogin(t, `{"tenant_id": "ten_4e", "user_id": "second"}`).Token
	s.do(t, "PATCH", "/v1/workspace", owner, `{"four_eyes": true}`).want(t, 200)
	var p processOut
	s.do(t, "POST", "/v1/processes", owner, invoiceProcess).want(t, 201).decode(t, &p)
	wide := strings.Replace(invoiceProcess, `"require_approval": true, `, ``, 1)
	var acc struct{Change struct{ID string}}
	s.do(t, "PATCH", "/v1/processes/"+p.ID, owner, wide).decode(t,&acc)
	r := s.do(t, "POST", "/v1/changes/"+acc.Change.ID+"/approve", second, `{}`)
	fmt.Println(r.Status, string(r.Body))
	r = s.do(t, "GET", "/v1/processes/"+p.ID+"/versions", owner, nil)
	fmt.Println(r.Status, string(r.Body))
}
