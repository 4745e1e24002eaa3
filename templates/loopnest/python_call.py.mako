<%doc>
  Calls a compiled loop nest: each C argument computed from the nest's inputs.
  Context: name, items (one Python expression per C argument; "inputs" is the tuple of the
  nest's inputs, "ap" makes an array's pointer, "entry" is the C function).
</%doc>\
def ${name}(inputs):
    return entry(
% for item in items:
        ${item},
% endfor
    )
