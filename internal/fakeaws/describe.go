package fakeaws

import (
	"encoding/xml"
	"net/url"
	"slices"
	"strings"
)

// The Describe* of EC2 and Auto Scaling, through one helper (describe): the filters of the request, checked
// against the names the action knows; what the action lists, in the order of its page key, and which of those
// the request names; those its filters pass; one page of them, answered as a list. What differs between the two
// services is their dialect (ec2Dialect, asgDialect); what differs between actions is a describer.

// dialect is how a Query service takes the filters and pages of a Describe, and writes its answer.
type dialect struct {
	// filter and values are the filters' parameters: filter.N.Name, filter.N.values.M.
	filter, values string
	// tagFilters says tag-key and tag-value are known to every Describe (tag:KEY is known to every one).
	tagFilters bool
	// unknownFilter is the error of a filter the action does not know.
	unknownFilter func(name string) *Error
	// maxParam is the page size's parameter, defaultMax its value when the request has none ("": no page, all of
	// them), badMax the error of a page size out of the action's bounds or of a bad token, made from EC2's.
	maxParam   string
	defaultMax string
	badMax     func(ec2 *Error) *Error
	// requestID says the answer starts with <requestId>; item is the element of the list's items; nextToken that
	// of the next page's token.
	requestID       bool
	item, nextToken string
}

var ec2Dialect = &dialect{
	filter: "Filter", values: "Value", tagFilters: true,
	unknownFilter: func(name string) *Error { return errorf("InvalidParameterValue", "The filter '%s' is invalid", name) },
	maxParam:      "MaxResults", badMax: func(e *Error) *Error { return e },
	requestID: true, item: "item", nextToken: "nextToken",
}

var asgDialect = &dialect{
	filter: "Filters.member", values: "Values.member",
	unknownFilter: func(name string) *Error { return validation("Filter name '%s' is invalid", name) },
	maxParam:      "MaxRecords", defaultMax: "50", badMax: func(e *Error) *Error { return validation("%s", e.Message) },
	item: "member", nextToken: "NextToken",
}

// filtersOf are a request's filters, checked against the names known.
func (d *dialect) filtersOf(form url.Values, known []string) ([]filter, error) {
	var out []filter
	for _, p := range subPrefixes(form, d.filter) {
		f := filter{name: form.Get(p + ".Name"), values: strList(form, p+"."+d.values)}
		tag := strings.HasPrefix(f.name, "tag:") || d.tagFilters && (f.name == "tag-key" || f.name == "tag-value")
		if !tag && !slices.Contains(known, f.name) {
			return nil, d.unknownFilter(f.name)
		}
		out = append(out, f)
	}
	return out, nil
}

// describer is what one Describe* knows of the things it lists, R, answered as items X.
type describer[R, X any] struct {
	*dialect
	// set is the element of the answer's list ("volumeSet", "AutoScalingGroups").
	set string
	// filters are the names of the filters the action knows beside the tags' (nil: it takes no filters).
	filters []string
	// minMax and maxMax bound the page size; a larger one gives maxMax, as EC2 documents it (the AWS CLI's
	// paging asks for 1000).
	minMax, maxMax int
	// field is the values of r that a filter matches (nil: none); tags are its tags (nil: none).
	field func(r R, filter string) []string
	tags  func(r R) map[string]string
	// key is the page key: what is listed is in its order, and a NextToken names the first of a page.
	key func(r R) string
	// item is r as the answer writes it.
	item func(r R) X
}

// describe answers a Describe*: it reads the request's filters, then asks choose for what to list (in key order)
// and which of those the request names (keep; nil: all), and answers one page of those that pass the filters.
// choose checks what the request names: its errors come after a filter's, as EC2's do.
func describe[R, X any](form url.Values, d describer[R, X], choose func() (all []R, keep func(R) bool, err error)) (any, error) {
	var filters []filter
	if d.filters != nil {
		var err error
		if filters, err = d.filtersOf(form, d.filters); err != nil {
			return nil, err
		}
	}
	all, keep, err := choose()
	if err != nil {
		return nil, err
	}
	var sel []R
	for _, r := range all {
		if keep != nil && !keep(r) {
			continue
		}
		var tags map[string]string
		if d.tags != nil {
			tags = d.tags(r)
		}
		if matches(filters, tags, func(name string) []string {
			if d.field == nil {
				return nil
			}
			return d.field(r, name)
		}) {
			sel = append(sel, r)
		}
	}
	if d.defaultMax != "" && !has(form, d.maxParam) {
		form = cloneWith(form, d.maxParam, d.defaultMax)
	}
	got, next, err := page(form, d.maxParam, sel, d.key, d.minMax, d.maxMax)
	if err != nil {
		return nil, d.badMax(err.(*Error))
	}
	xs := make([]X, 0, len(got))
	for _, r := range got {
		xs = append(xs, d.item(r))
	}
	return listAnswer[X]{d.dialect, d.set, xs, next}, nil
}

// listAnswer is the answer of a Describe*: EC2's <requestId/><set><item/>...</set><nextToken/>, Auto Scaling's
// <set><member/>...</set><NextToken/>; the token only when there is a next page.
type listAnswer[X any] struct {
	*dialect
	set   string
	items []X
	next  string
}

func (a listAnswer[X]) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	if a.requestID {
		if err := e.EncodeElement("fake-request", xml.StartElement{Name: xml.Name{Local: "requestId"}}); err != nil {
			return err
		}
	}
	set := xml.StartElement{Name: xml.Name{Local: a.set}}
	if err := e.EncodeToken(set); err != nil {
		return err
	}
	for _, x := range a.items {
		if err := e.EncodeElement(x, xml.StartElement{Name: xml.Name{Local: a.item}}); err != nil {
			return err
		}
	}
	if err := e.EncodeToken(set.End()); err != nil {
		return err
	}
	if a.next != "" {
		if err := e.EncodeElement(a.next, xml.StartElement{Name: xml.Name{Local: a.nextToken}}); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

// cloneWith is form with k set to v.
func cloneWith(form url.Values, k, v string) url.Values {
	f := url.Values{}
	for key, vs := range form {
		f[key] = vs
	}
	f.Set(k, v)
	return f
}

// ids is how a Describe's request names resources by id: param.N, each "prefix-...", or the error malformed.
// unpaged, when not "", is the set's name in the error of ids given with MaxResults: the Describe* that refuse to
// page what they name.
type ids struct{ param, prefix, malformed, unpaged string }

// byID is what a Describe that takes ids lists (all, listed once the ids are checked) and keeps (those named, when
// the request names some); a named id not among them is not found.
func byID[R any](form url.Values, p ids, all func() []R, id func(R) string) ([]R, func(R) bool, error) {
	want := strList(form, p.param)
	for _, w := range want {
		if !strings.HasPrefix(w, p.prefix+"-") {
			return nil, nil, errorf(p.malformed, "Invalid id: \"%s\"", w)
		}
	}
	if p.unpaged != "" && len(want) > 0 && has(form, "MaxResults") {
		return nil, nil, errorf("InvalidParameterCombination", "The parameter %s cannot be used with the parameter maxResults", p.unpaged)
	}
	rs := all()
	for _, w := range want {
		if !slices.ContainsFunc(rs, func(r R) bool { return id(r) == w }) {
			return nil, nil, notFound(w)
		}
	}
	return rs, named(want, id), nil
}

// inIDOrder is the resources of m that keep keeps, in id order.
func inIDOrder[T any](m map[string]T, keep func(T) bool) []T {
	var out []T
	for _, id := range sortedIDs(m, keep) {
		out = append(out, m[id])
	}
	return out
}

// named is the keep of a request that names ids: those resources (nil when it names none: all of them).
func named[R any](ids []string, id func(R) string) func(R) bool {
	if len(ids) == 0 {
		return nil
	}
	return func(r R) bool { return slices.Contains(ids, id(r)) }
}

// self is the item of a describer whose things are written as they are.
func self[X any](x X) X { return x }

// fields is a describer's field from a table of a thing's values by filter.
func fields[R any](table func(r R) map[string][]string) func(R, string) []string {
	return func(r R, name string) []string { return table(r)[name] }
}
