// SPDX-License-Identifier: MIT
// throw N: N C++ throw/catch rounds (the unwinder and the loader lock under
// the agent's signals), with allocations by new/delete.  Prints the count.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

__attribute__((noinline)) static void thrower(int i)
{
	std::vector<int> *v = new std::vector<int>(100, i);
	int x = (*v)[5];
	delete v;
	if (x >= 0)
		throw std::runtime_error("round " + std::to_string(i));
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 1000, caught = 0;

	for (int i = 0; i < n; i++) {
		try {
			thrower(i);
		} catch (const std::exception &e) {
			caught += e.what()[0] == 'r';
		}
	}
	std::printf("%d\n", caught);
	return caught == n ? 0 : 1;
}
