<%doc>
  Reads a nest's inputs from the kernel's locals (L), globals (G) and closure cells (C).
  Context: name, items: list of Python expressions, one per input, in order.
</%doc>\
def ${name}(L, G, C, UNBOUND):
    return (
% for item in items:
        ${item},
% endfor
    )
