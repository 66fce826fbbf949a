package engine

import "context"

// Bound is a task bound to a world of its own (Bind): AddBound puts it into a graph of any world, and the engine
// runs it on the world it was bound to, not on the graph's. A graph's builder that does not know a task's world
// type can so hold that task: a protokube round (world *protokube.Round) runs a cloud's route tasks (world
// *awstasks.Cloud), which the cloud's node package makes and binds.
type Bound struct {
	task      Task
	sync      func(ctx context.Context, target Target, lc Lifecycle) (*Change, error)
	canRender bool
	opts      []AddOption
}

// Bind binds task to world, with the options it is added with.
func Bind[T Resource[T, W], W any](task T, world W, opts ...AddOption) Bound {
	r := &typed[T, W]{task: task, ti: typeInfoOf(structOf(task).Type())}
	return Bound{
		task: task,
		sync: func(ctx context.Context, target Target, lc Lifecycle) (*Change, error) {
			return r.sync(ctx, world, target, lc)
		},
		canRender: r.canRender(),
		opts:      opts,
	}
}

// Task is the task b binds.
func (b Bound) Task() Task { return b.task }

// AddBound puts the bound task b into g and returns the task the graph holds under its key, as Add does.
func AddBound[C any](g *Graph[C], b Bound) Task {
	return add(g, b.task, boundRunner[C]{b}, b.opts)
}

// boundRunner runs a bound task on its own world, whatever the graph's.
type boundRunner[C any] struct{ b Bound }

func (r boundRunner[C]) sync(ctx context.Context, _ C, target Target, lc Lifecycle) (*Change, error) {
	return r.b.sync(ctx, target, lc)
}

func (r boundRunner[C]) canRender() bool { return r.b.canRender }
