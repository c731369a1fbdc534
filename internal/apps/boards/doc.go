// Package boards is the built-in boards app: work tracking on boards made
// from a template (a simple to-do board, a project plan, an agile board, a
// service desk), with statuses, typed columns, groups and items.
//
// # Boards and their parts
//
// A board (Board, Detail) has a key ("OPS", unique in its workspace,
// derived from the name when not given), ordered statuses (each in a
// category: backlog, unstarted, started, completed, cancelled, with a
// color), typed columns (text, number, date, person, status, dropdown,
// checkbox, link; settings checked per type) and groups. The template
// gives the starting shape (see the golden files in testdata). Parts are
// kept in the board's record: a board has at most 50 statuses, 100
// columns and 100 groups, and its detail is one read. Each status and group
// carries item_count, from counters kept in the transaction that moves an
// item.
//
// A status or group that holds items cannot be deleted, unless a move_to
// names where its items go: they then move in batches (one transaction
// each, with their events) and the last transaction removes the part once
// it is empty. The last status of a board cannot be deleted.
//
// # Items
//
// An item's key is "<board key>-<n>", n counting from 1 per board in a
// counter key read and written in the creating transaction: concurrent
// creations conflict on it and are retried by the store, so keys are
// unique and gapless until a delete, and never reused. values maps column
// ids to values checked against the column's type; a date column with
// sla_hours in its settings gets created_at + sla_hours when an item is
// created without a value for it.
//
// An item's position is a rank key (see rank.go): a string whose byte
// order is the item's place in its status, with a key between any two. A
// move (a new status, before_id, after_id, or an index) computes one new
// key from the neighbours' and rewrites that item alone. Entering a status
// in the completed category sets completed_at; leaving it clears it.
// Keys placed again and again at one spot grow longer; when one would pass
// 40 characters, the run of long keys around it is given evenly spaced
// short keys in the same transaction (the one case where a move rewrites
// other items, once per some hundreds of placements at that spot).
//
// # Lists
//
// Every list is an index walk. Items of a status are listed in position
// order (with a group and/or an assignee, from the matching
// position-ordered list); by group, assignee or the whole board newest
// first; q matches whole words of the title and key, walking the word
// index of its longest word.
//
// # Events and capabilities
//
// boards.item.created, boards.item.moved (status or group changed) and
// boards.item.completed (entered a completed status) are emitted through
// the EventSink in the transaction of the change; their data is the item
// in brief with its board, status (name and category) and, for moves,
// where it came from. Provider (builtin.boards) fills board.item.create,
// board.item.move and board.item.update, so a process can open a ticket
// and a wait step on boards.item.completed filtered by item_id ends when
// it is resolved.
package boards
